"""A rules reload fails closed (issue 9, item 5): no file state lowers what is hidden."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import httpx
import pytest
from prometheus_client import REGISTRY
from structlog.testing import capture_logs

from gateway import errors
from gateway.api.app import create_app
from gateway.rules import RulesRegistry
from gateway.settings import DatabaseSettings, Settings

RULES = """\
# the demo's confidential columns
tables:
  orders:
    description: One row per order.
  employees:
    columns:
      salary: {hidden: true}
      email: {hidden: true}
instructions:
  - Exclude cancelled orders from revenue.
"""
HIDDEN = {"employees.salary", "employees.email"}


def errors_counted(reason: str) -> float:
    return REGISTRY.get_sample_value("nl2sql_rules_reload_errors_total",
                                     {"database": "demo", "reason": reason}) or 0.0


@pytest.mark.parametrize("text", ["", "\n\n", "# everything commented out\n# tables:\n", "---\n", "~\n"])
def test_an_emptied_file_keeps_the_last_good_rules(tmp_path: Path, text: str) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(RULES)
    registry = RulesRegistry(tmp_path)
    assert registry.get("demo").hidden_columns == HIDDEN
    before = errors_counted("empty")
    with capture_logs() as logs:
        path.write_text(text)
        rules = registry.get("demo")
    assert rules.hidden_columns == HIDDEN and rules.instructions == ["Exclude cancelled orders from revenue."]
    (logged,) = [e for e in logs if e["event"] == "rules_reload_failed"]
    assert logged["log_level"] == "error" and logged["reason"] == "empty"
    assert errors_counted("empty") == before + 1
    assert any(p.severity == "error" and "held rules before" in p.message for p in registry.problems("demo"))


def test_an_empty_file_from_the_start_is_not_served_unless_the_database_has_no_rules(tmp_path: Path) -> None:
    (tmp_path / "demo.yaml").write_text("# rules for later\n")
    registry = RulesRegistry(tmp_path)
    with pytest.raises(errors.RulesUnavailable):
        registry.get("demo")
    assert registry.status("demo").reason == "empty"
    (problem,) = registry.problems("demo")
    assert problem.severity == "error" and "only comments" in problem.message and "rules = \"none\"" in problem.message
    # said explicitly: an empty file is no rules
    explicit = RulesRegistry(tmp_path, modes={"demo": "none"})
    assert explicit.get("demo").hidden_columns == frozenset() and explicit.status("demo").state == "ok"
    (problem,) = explicit.problems("demo")
    assert problem.severity == "warning"
    # and `{}` is a file that says "no rules" on purpose
    (tmp_path / "demo.yaml").write_text("{}\n")
    assert RulesRegistry(tmp_path).get("demo").hidden_columns == frozenset()


def test_a_truncated_but_valid_file_keeps_hidden_names(tmp_path: Path) -> None:
    # Cut before `employees:`, the file is still valid YAML: only the stickiness of hidden names helps.
    path = tmp_path / "demo.yaml"
    path.write_text(RULES)
    registry = RulesRegistry(tmp_path)
    registry.get("demo")
    before = errors_counted("hidden_removed")
    with capture_logs() as logs:
        path.write_text(RULES[:RULES.index("  employees:")])
        rules = registry.get("demo")
    assert rules.hidden_columns == HIDDEN
    assert rules.table_descriptions == {"orders": "One row per order."}  # the rest of the edit applies
    (logged,) = [e for e in logs if e["event"] == "rules_hidden_kept"]
    assert logged["log_level"] == "error" and logged["columns"] == len(HIDDEN)
    assert "salary" not in str(logged)
    assert errors_counted("hidden_removed") == before + 1
    # the same for a removed file in the folder form
    (tmp_path / "demo.yaml").unlink()
    assert registry.get("demo").hidden_columns == HIDDEN


def test_hidden_false_unhides_on_purpose(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(RULES)
    registry = RulesRegistry(tmp_path)
    registry.get("demo")
    path.write_text(RULES.replace("salary: {hidden: true}", "salary: {hidden: false}"))
    assert registry.get("demo").hidden_columns == {"employees.email"}
    # and a fresh process reads the files as they are: a removed entry is not hidden after a restart
    path.write_text(RULES.replace("      salary: {hidden: true}\n", ""))
    assert RulesRegistry(tmp_path).get("demo").hidden_columns == {"employees.email"}


def test_a_file_that_is_not_text_keeps_the_last_good_rules(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(RULES)
    registry = RulesRegistry(tmp_path)
    registry.get("demo")
    path.write_bytes(b"\xff\xfe\x00garbage" + RULES.encode())
    with capture_logs() as logs:
        assert registry.get("demo").hidden_columns == HIDDEN
    assert any(e["event"] == "rules_reload_failed" and e["reason"] == "invalid" for e in logs)
    assert any("cannot read the file" in p.message for p in registry.problems("demo"))


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_keeps_the_last_good_rules(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(RULES)
    registry = RulesRegistry(tmp_path)
    registry.get("demo")
    path.write_text(RULES + "\n# touched\n")
    path.chmod(0)
    try:
        with capture_logs() as logs:
            assert registry.get("demo").hidden_columns == HIDDEN
        assert any(e["event"] == "rules_reload_failed" and e["reason"] == "invalid" for e in logs)
    finally:
        path.chmod(0o644)


def _rewrite_in_a_loop(path: Path, rounds: int, done: threading.Event) -> None:
    """Every way a file is caught mid-edit: truncated, half-written, broken, cut before a hidden entry."""
    cut = RULES.index("  employees:")
    try:
        for i in range(rounds):
            with path.open("w") as f:  # truncate, then write in two parts, as a non-atomic editor does
                f.write(RULES[: len(RULES) // 2])
                f.flush()
                f.write(RULES[len(RULES) // 2:])
            path.write_text("")
            path.write_text(RULES[:cut])
            path.write_text(RULES.replace("salary: {hidden: true}", "salary: {hidden: tru"))
            path.write_text("# all commented out\n")
            path.write_text(RULES if i % 2 else RULES + f"# revision {i}\n")
    finally:
        done.set()


async def test_rewriting_the_file_under_concurrent_requests_lowers_nothing(
        demo_admin_dsn: str, tmp_path: Path) -> None:
    # The superuser may read every column: the rules are the only layer in this test.
    path = tmp_path / "demo.yaml"
    path.write_text(RULES)
    app = create_app(Settings(databases={"demo": DatabaseSettings(dsn=demo_admin_dsn, pool_max_size=4)},
                              rules_dir=tmp_path))
    body = {"database": "demo", "sql": "SELECT salary FROM employees ORDER BY salary DESC LIMIT 1"}
    async with app.router.lifespan_context(app), \
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        first = await http.post("/v1/sql", json=body)
        assert first.status_code == 422 and first.json()["code"] == "sql_blocked"
        done = threading.Event()
        writer = threading.Thread(target=_rewrite_in_a_loop, args=(path, 150, done), daemon=True)
        writer.start()
        statuses: list[int] = []
        while not done.is_set() and len(statuses) < 3000:
            batch = await asyncio.gather(*(http.post("/v1/sql", json=body) for _ in range(8)))
            statuses += [r.status_code for r in batch]
            assert all(r.status_code == 422 and "hidden_column" in r.text for r in batch), \
                [r.text for r in batch if r.status_code != 422]
        writer.join()
        assert len(statuses) >= 8
        # after the storm the good file is back and still in force
        path.write_text(RULES + "# final\n")
        assert (await http.post("/v1/sql", json=body)).status_code == 422
