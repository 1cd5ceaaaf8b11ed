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


def test_the_safety_check_does_no_io() -> None:
    for path in (PACKAGE / "safety").rglob("*.py"):
        found = {top(n) for n in imports(path)} & IO_MODULES
        assert not found, f"{path.name} imports {found}"
        assert not any(n.startswith("gateway.") and not n.startswith("gateway.safety") for n in imports(path)), path


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
    # DBA tool reads the whole catalog (`init`'s grants, `rules check`), which a Gateway never shows.
    for path in modules():
        rel = str(path.relative_to(PACKAGE))
        if rel not in {"service.py", "execute/pool.py", "execute/__init__.py", "llm.py", "cli.py", "rules/cli.py"}:
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
