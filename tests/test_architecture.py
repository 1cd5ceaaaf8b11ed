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
