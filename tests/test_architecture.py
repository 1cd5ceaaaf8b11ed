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
    # Resources are opened in one place: no other module opens the LLM client or target pools (the DBA tools
    # that read the whole catalog, `init`, `rules check` and `semantic check`, ask Gateway's class methods).
    for path in modules():
        rel = str(path.relative_to(PACKAGE))
        if rel not in {"service.py", "execute/pool.py", "execute/__init__.py", "llm.py"}:
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


# --- import graph: entry points go through Gateway; no cycles (issue 26) ------------------------------------

def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes under ``if TYPE_CHECKING:``: imports for annotations, never run."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside |= {id(n) for statement in node.body for n in ast.walk(statement)}
    return inside


def gateway_imports(path: Path, known: dict[str, Path], *, lazy: bool = True, typing_only: bool = True) -> set[str]:
    """The modules of ``known`` (name -> file) that ``path`` imports, resolved to module names (``from
    gateway.store import api_keys`` is ``gateway.store.api_keys``, relative imports too). ``lazy``: also the
    imports inside functions; ``typing_only``: also those under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text())
    here = next(name for name, file in known.items() if file == path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    skipped = set() if typing_only else _type_checking_only(tree)
    at_import = {id(n) for top in tree.body if not isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef |
                                                             ast.ClassDef) for n in ast.walk(top)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped or (not lazy and id(node) not in at_import):
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], *([node.module] if node.module else [])])
            found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names}
    return {name for name in found if name in known and name != here}


def import_cycles(known: dict[str, Path], *, lazy: bool) -> list[list[str]]:
    """Groups of modules that import each other, directly or around a loop (Tarjan's strongly connected
    components), ignoring TYPE_CHECKING imports and a module's import of its own package (an ancestor is
    always imported first, so that is no cycle)."""
    graph = {name: {m for m in gateway_imports(path, known, lazy=lazy, typing_only=False)
                    if not name.startswith(m + ".")} for name, path in known.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(group) > 1:
                found.append(sorted(group))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return sorted(found)


def package_modules(root: Path) -> dict[str, Path]:
    return {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}


# Cycles closed only by an import inside a function (the other module is loaded by the time it runs), in
# modules other work owns: listed so that a new cycle fails the test and a fixed one must be struck off.
LAZY_CYCLES_KNOWN = [
    ["gateway.context.cache", "gateway.context.scope"],  # cache makes a scoped snapshot; scope builds on the cache
    ["gateway.safety.rules.recursion", "gateway.safety.sizes"],  # sizes asks recursion for a CTE's iterations
]


def test_no_import_cycles_in_the_package() -> None:
    """No cycle among import-time imports, and none through a function's import but the known ones
    (``gateway.cli`` and ``gateway.rules.cli`` imported each other until the settings loader moved to
    ``gateway.cli_config``)."""
    known = package_modules(PACKAGE)
    assert import_cycles(known, lazy=False) == []
    assert import_cycles(known, lazy=True) == LAZY_CYCLES_KNOWN


def test_the_cycle_finder_sees_cycles_through_packages_and_functions(tmp_path: Path) -> None:
    root = tmp_path / "gateway"
    (root / "x").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "x" / "__init__.py").write_text("from gateway.x import a\n")  # a package importing its module: fine
    (root / "x" / "a.py").write_text("from gateway.x import b\nimport gateway\n")
    (root / "x" / "b.py").write_text("def f():\n    from .a import g\n")
    (root / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gateway.x.a import g\n")
    known = package_modules(root)
    assert import_cycles(known, lazy=False) == []
    assert import_cycles(known, lazy=True) == [["gateway.x.a", "gateway.x.b"]]


# The command line and the evaluation are entry points: what a running gateway does, they ask Gateway
# (gateway.service) for. None imports the stages, the guarded execution, the store or the state bag.
ENTRY_POINTS = ("cli.py", "cli_config.py", "templates_cli.py", "quickstart.py", "starter.py", "auth/cli.py",
                "magic/cli.py", "rules/cli.py", "semantic/cli.py", "store/cli.py", "store/examples_cli.py", "eval/")
BEHIND_GATEWAY = ("gateway.pipeline", "gateway.execute", "gateway.store", "gateway.state")

# (entry point, module it imports) -> why it may. Struck off as each moves behind Gateway: the test also fails
# on an exception no longer needed.
_REPLAY = ("the regression replay engine runs below Gateway: gateway.magic.gate replays inside the gateway before "
           "an activation, Gateway.replay_verified for `eval replay`; it asks questions on views of the state as the "
           "pipeline's orchestrators do (it belongs with MAGIC in the learning folder)")
_VERIFIED = "the verified set the replay engine reads (Gateway.verified_items for `eval replay`; gateway.magic.gate)"
ENTRY_POINT_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("eval/replay.py", "gateway.execute"): _REPLAY,
    ("eval/replay.py", "gateway.pipeline"): _REPLAY,
    ("eval/replay.py", "gateway.pipeline.tally"): _REPLAY,
    ("eval/replay.py", "gateway.state"): _REPLAY,
    ("eval/replay.py", "gateway.store.examples"): _REPLAY,
    ("eval/verified.py", "gateway.store.examples"): _VERIFIED,
    ("eval/verified.py", "gateway.store.pool"): _VERIFIED,
    ("eval/verified.py", "gateway.store.templates"): _VERIFIED,
    ("store/cli.py", "gateway.store.migrate"): "`migrate` runs the store's migrations before any Gateway can open on "
                                               "it (one opened with store.migrate_on_start off needs them applied)",
}


def _is_entry_point(name: str) -> bool:
    """``gateway.store.cli`` is a command module (it moves to ``gateway/cli/``), not the store."""
    return name.removeprefix("gateway.").replace(".", "/") + ".py" in ENTRY_POINTS


def _behind_gateway(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in BEHIND_GATEWAY)


def test_entry_points_reach_the_gateway_only_through_gateway() -> None:
    known = package_modules(PACKAGE)
    found = set()
    for path in modules():
        rel = str(path.relative_to(PACKAGE))
        if rel in ENTRY_POINTS or any(rel.startswith(folder) for folder in ENTRY_POINTS if folder.endswith("/")):
            found |= {(rel, name) for name in gateway_imports(path, known)
                      if _behind_gateway(name) and not _is_entry_point(name)}
    new = sorted(found - set(ENTRY_POINT_EXCEPTIONS))
    assert not new, f"entry points import what Gateway holds: {new}; add a Gateway method (gateway/service.py)"
    assert not sorted(set(ENTRY_POINT_EXCEPTIONS) - found), "exceptions no longer needed: strike them off"


def test_the_entry_point_check_resolves_every_import_spelling(tmp_path: Path) -> None:
    root = tmp_path / "gateway"
    (root / "store").mkdir(parents=True)
    for name in ("__init__.py", "cli.py", "store/__init__.py", "store/api_keys.py", "store/cli.py"):
        (root / name).write_text("")
    (root / "cli.py").write_text("def f():\n    from gateway.store import api_keys\n")
    (root / "store" / "cli.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                           "    from . import api_keys\n")
    known = package_modules(root)
    assert gateway_imports(root / "cli.py", known) == {"gateway.store.api_keys"}
    assert gateway_imports(root / "store" / "cli.py", known) == {"gateway.store.api_keys"}
    assert gateway_imports(root / "store" / "cli.py", known, typing_only=False) == set()


def test_the_commands_constants_match_the_stores() -> None:
    """The commands spell out two constants of the store they may not import."""
    from gateway.magic.cli import SHIPPED
    from gateway.store import examples, guidelines
    from gateway.store.examples_cli import STATUSES

    assert STATUSES == examples.STATUSES
    assert SHIPPED == guidelines.SHIPPED
