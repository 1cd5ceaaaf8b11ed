"""The package's shape, checked: who may talk to Postgres, and what the safety check may import."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "gateway"
DB_LAYERS = ("execute", "store", "demo")  # demo builds databases: part of the execution layer
IO_MODULES = {"asyncpg", "socket", "httpx", "openai", "urllib", "requests", "subprocess", "aiohttp", "uvicorn"}


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def top(name: str) -> str:
    return name.split(".")[0]


def test_only_the_execution_and_store_layers_import_asyncpg() -> None:
    offenders = [
        str(p.relative_to(PACKAGE)) for p in modules()
        if "asyncpg" in {top(n) for n in imports(p)} and p.relative_to(PACKAGE).parts[0] not in DB_LAYERS
    ]
    assert not offenders, offenders


# What the safety check may import from the rest of the gateway: only the finding type and code registry,
# a module that itself imports nothing of the gateway (checked below), so the check stays pure.
SAFETY_MAY_IMPORT = {"gateway.findings"}


def test_the_safety_check_does_no_io() -> None:
    for path in (PACKAGE / "safety").rglob("*.py"):
        found = {top(n) for n in imports(path)} & IO_MODULES
        assert not found, f"{path.name} imports {found}"
        outside = {n for n in imports(path) if n.startswith("gateway.") and not n.startswith("gateway.safety")}
        assert outside <= SAFETY_MAY_IMPORT, (path, outside - SAFETY_MAY_IMPORT)


def test_the_finding_registry_depends_on_nothing() -> None:
    """``gateway.findings`` sits under the safety check: the standard library only, no I/O."""
    names = {top(n) for n in imports(PACKAGE / "findings.py")}
    assert names <= {"__future__", "collections", "dataclasses", "typing"}, names


def _finding_codes_built_in(path: Path) -> list[tuple[int, str]]:
    """Codes written as literals where a finding is made: ``Finding("code", ...)`` and ``Finding(code="...")``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if name != "Finding":
                continue
            args = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "code")]
            found += [(node.lineno, a.value) for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return found


def test_only_the_registry_defines_finding_codes() -> None:
    """Every finding the gateway makes carries a code registered in ``gateway.findings.CODES``, and no module
    but the registry defines a finding class of its own."""
    from gateway.findings import CODES

    made = 0
    for path in modules():
        rel = path.relative_to(PACKAGE)
        for line, code in _finding_codes_built_in(path):
            made += 1
            assert code in CODES, f"{rel}:{line} makes a finding with the unregistered code {code!r}"
        if rel != Path("findings.py"):
            classes = [n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)]
            assert not [c for c in classes if c.endswith(("Finding", "Violation"))], f"{rel} defines {classes}"
    assert made > 40  # the scan sees the safety rules and the pipeline's findings


def test_the_api_layer_holds_no_sql_machinery() -> None:
    for path in (PACKAGE / "api").rglob("*.py"):
        found = {top(n) for n in imports(path)} & {"asyncpg", "sqlglot", "pglast", "openai"}
        assert not found, f"api/{path.name} imports {found}: business logic belongs in a stage module"


def test_safety_public_surface_is_small_and_sorted() -> None:
    import gateway.safety as safety

    assert safety.__all__ == sorted(safety.__all__)
    assert {"check", "Policy", "Verdict", "Finding"} <= set(safety.__all__)


def test_only_the_http_app_enters_its_lifespan_and_every_adapter_opens_a_gateway() -> None:
    """One assembly of resources: ``gateway.service.Gateway``. The HTTP app is one adapter over it; the CLI,
    eval and MCP open a Gateway rather than the app (only ``serve`` builds the app, to serve it)."""
    for path in modules():
        rel = path.relative_to(PACKAGE)
        text = path.read_text()
        if rel.parts[0] != "api":
            assert "lifespan_context" not in text, f"{rel} enters the HTTP app's lifespan: open a Gateway"
            built_app = "gateway.api.app" in imports(path)
            assert not built_app or rel == Path("cli.py"), f"{rel} builds the HTTP app: open a Gateway"
    opened = {str(p.relative_to(PACKAGE)) for p in modules() if "Gateway(" in p.read_text()}
    assert {"api/app.py", "eval/pipeline.py", "magic/cli.py", "mcp/stdio.py"} <= opened, opened
    # Resources are opened in one place: no other module opens the LLM client, and target pools only where a
    # DBA tool reads the whole catalog (`init`'s grants, `rules check`, `semantic check`), which a Gateway never
    # shows.
    for path in modules():
        rel = str(path.relative_to(PACKAGE))
        if rel not in {"service.py", "execute/pool.py", "execute/__init__.py", "llm.py", "cli.py", "rules/cli.py",
                       "semantic/cli.py"}:
            text = path.read_text()
            assert "Targets.open(" not in text and "open_llm(" not in text, f"{rel} assembles resources"


def test_pipeline_stages_live_in_one_package_in_order() -> None:
    import gateway.pipeline as pipeline

    stages = ["question", "generate", "check", "execute", "validate", "reflect", "respond"]
    for stage in stages:
        assert (PACKAGE / "pipeline" / f"{stage}.py").exists(), stage
    doc = pipeline.__doc__ or ""
    positions = [doc.index(f"gateway.pipeline.{stage}") for stage in stages]
    assert positions == sorted(positions), "the package docstring lists the stages in the order they run"


# Orchestrators run a whole question (or a MAGIC / eval run) and hold the state; everything else takes the
# parts it uses, so that its dependencies are visible in its signature and its tests need only those.
ORCHESTRATORS = {"pipeline/loop.py", "pipeline/verified.py", "pipeline/stream.py",
                 "pipeline/trusted.py",  # as verified.py: the store, the schema views, the tally
                 "pipeline/conversation.py",  # wraps the loop: opens the thread, records the turn
                 "rules/grants.py"}  # report_privileges keeps its report on the state for /readyz


def test_stages_take_what_they_use_not_the_whole_state() -> None:
    folders = ("pipeline", "context", "safety", "execute", "rules")
    stages = [path for folder in folders for path in (PACKAGE / folder).rglob("*.py")]
    stages += [PACKAGE / name for name in ("client_sql.py", "feedback.py", "masking.py", "findings.py")]
    for path in stages:
        rel = str(path.relative_to(PACKAGE))
        if rel not in ORCHESTRATORS:
            assert "gateway.state" not in imports(path), f"{rel} takes the whole GatewayState: pass it the parts"
