"""The Python API as docs/python-api.md documents it: its example runs against the embedded demo and
prints what its comments say; every public Gateway operation says what it does."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from gateway.service import Gateway
from gateway.testing.scripted_llm import ScriptedLLM
from tests.ask.helpers import is_generation, sql

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
PER_REGION = ("SELECT r.name AS region, count(*) AS orders FROM orders o JOIN customers c USING (customer_id) "
              "JOIN regions r ON r.region_id = c.region_id WHERE o.status <> 'cancelled' GROUP BY 1 ORDER BY 2 DESC")


def readme_example() -> str:
    (code,) = re.findall(r"```python\n(.*?)```", PAGE, re.S)
    return code


def expected_lines(code: str) -> list[str]:
    """The ``# ...`` comment of each print line: what the line prints, ``...`` matching anything."""
    return [line.split("  # ", 1)[1].strip() for line in code.splitlines()
            if line.strip().startswith("print(") and "  # " in line]


def matches(pattern: str, line: str) -> bool:
    return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("...")), line) is not None


async def test_the_readme_example_runs_against_the_demo(demo_dsn: str, llm: ScriptedLLM, tmp_path: Path) -> None:
    code = readme_example()
    assert "Gateway(settings)" in code and "load_settings()" in code and "asyncio.run(main())" in code
    # The demo answers this question from a verified example; here the scripted LLM answers it, so the
    # example runs with or without the feedback store.
    llm.add(lambda request: sql(PER_REGION) if is_generation(request) else None, times=1)
    config = tmp_path / "nl2sql-gateway-demo.toml"
    config.write_text("\n".join([
        f"rules_dir = {json.dumps(str(ROOT / 'rules'))}",
        f"guidelines_dir = {json.dumps(str(ROOT / 'guidelines'))}",
        "[databases.demo]", f"dsn = {json.dumps(demo_dsn)}",
        "[llm]", f"base_url = {json.dumps(llm.base_url)}", 'model = "scripted-model"',
        "[auth]", "enabled = false", "",
    ]))
    (tmp_path / "example.py").write_text(code)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NL2SQL_", "OPENAI_"))}
    env["NL2SQL_CONFIG"] = str(config)
    if os.environ.get("NL2SQL_TEST_READER_PASSWORD"):
        env["NL2SQL_DATABASES__DEMO__PASSWORD"] = os.environ["NL2SQL_TEST_READER_PASSWORD"]
    env["PYTHONPATH"] = str(ROOT)
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "example.py"], cwd=tmp_path, env=env,
                                   capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = done.stdout.splitlines()
    expected = expected_lines(code)
    assert len(expected) == 6 and len(printed) == len(expected), (printed, expected)
    for pattern, line in zip(expected, printed, strict=True):
        assert matches(pattern, line), (pattern, line)
    assert printed[-1] == PER_REGION  # the answer's SQL is the one the LLM wrote, checked and run
    assert re.fullmatch(r"orders \[\[\d+\]\]", printed[2])
    assert len(llm.requests) == 1


def test_every_public_gateway_operation_has_a_docstring() -> None:
    public = [name for name, member in inspect.getmembers(Gateway)
              if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, property))]
    assert {"databases", "schema", "check", "sql", "question", "ask", "ask_events", "feedback", "guidelines",
            "guideline", "regenerate", "activate", "rollback", "readiness"} <= set(public)
    assert "state" not in public  # the resources are Gateway's own: adapters call its operations
    for name in [*public, "__init__", "__aenter__", "__aexit__"]:
        member = inspect.getattr_static(Gateway, name)
        doc = (member.fget if isinstance(member, property) else member).__doc__
        assert doc and len(doc.split()) >= 5, f"Gateway.{name} needs a docstring that says what it does"
    for name in public:
        assert f"`{name}`" in PAGE, f"Gateway.{name} is missing from docs/python-api.md"
