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


def modules(root: Path = PACKAGE) -> list[Path]:
    return sorted(root.rglob("*.py"))


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
            assert not built_app or rel == Path("cli/main.py"), f"{rel} builds the HTTP app: open a Gateway"
    opened = {str(p.relative_to(PACKAGE)) for p in modules() if "Gateway(" in p.read_text()}
    assert {"api/app.py", "eval/pipeline.py", "cli/magic.py", "mcp/stdio.py"} <= opened, opened
    # Resources are opened in one place: no other module opens the LLM client or target pools (the DBA tools
    # that read the whole catalog, `init`, `rules check` and `semantic check`, ask Gateway's class methods).
    for path in modules():
        rel = str(path.relative_to(PACKAGE))
        if rel not in {"service.py", "execute/pool.py", "execute/__init__.py", "llm/client.py"}:
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


# Only Gateway builds and holds the state. Stages take the parts they use; the orchestrators (the loop and its
# kin, MAGIC) take a read-only protocol of gateway.pipeline.ports, so that their dependencies are visible in
# their signatures and their tests need only those. MAGIC's gate replays under copies of the state itself
# (gateway.magic.replay's variants), the one place that needs the concrete class.
HOLDS_THE_STATE = {"service.py", "state.py", "magic/gate.py", "magic/replay.py"}


def test_stages_take_what_they_use_not_the_whole_state() -> None:
    for path in modules():
        rel = str(path.relative_to(PACKAGE))
        if rel not in HOLDS_THE_STATE:
            assert "gateway.state" not in imports(path), f"{rel} takes the whole GatewayState: pass it the parts"
            assert "GatewayState" not in path.read_text(), f"{rel} names GatewayState: take a protocol of its parts"


def test_the_state_is_frozen_and_has_no_free_form_bag() -> None:
    import dataclasses

    from gateway.state import GatewayState

    params = getattr(GatewayState, "__dataclass_params__", None)
    assert params is not None and params.frozen, "GatewayState is built once (Gateway._open), then frozen"
    names = {f.name for f in dataclasses.fields(GatewayState)}
    assert "extras" not in names, "a resource gets a typed field, not a key in a dict"
    state_text = (PACKAGE / "state.py").read_text()
    assert "type: ignore" not in state_text


def test_no_stage_signature_takes_an_untyped_context_or_the_concrete_llm_client() -> None:
    for path in (PACKAGE / "pipeline").rglob("*.py"):
        text = path.read_text()
        assert "ctx: Any" not in text, f"{path.name}: type the context (gateway.context.Context)"
        assert "LLMClient" not in text, f"{path.name}: take the LLM protocol (gateway.llm.client.LLM), not the client"


# gateway/'s top level is the package face (__init__, __main__), settings, errors, ``Gateway`` (service), its
# state, the finding registry and at most one more; everything else lives in a folder named for what it serves.


def test_the_top_level_holds_only_the_package_face() -> None:
    top = {p.name for p in PACKAGE.glob("*.py")}
    assert {"__init__.py", "__main__.py", "settings.py", "errors.py", "service.py", "findings.py"} <= top
    assert len(top) <= 8, f"{len(top)} modules at gateway/'s top level: {sorted(top)}"


def _module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_nodes(body: list[ast.stmt], *, in_functions: bool) -> list[ast.Import | ast.ImportFrom]:
    """The imports a module runs: at module level (``if``/``try``/``with`` included, ``if TYPE_CHECKING`` not),
    and with ``in_functions`` also those inside functions and classes."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            found += _import_nodes(node.orelse, in_functions=in_functions)
        elif isinstance(node, ast.If | ast.Try | ast.With) or (
                in_functions and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)):
            for field in ("body", "orelse", "finalbody"):
                found += _import_nodes(getattr(node, field, []), in_functions=in_functions)
            for handler in getattr(node, "handlers", []):
                found += _import_nodes(handler.body, in_functions=in_functions)
    return found


def import_graph(*, in_functions: bool, root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules of the package at ``root`` it imports (``from a import b`` counts as importing
    ``a.b`` when that is a module, else ``a``)."""
    paths = {_module_name(p, root): p for p in modules(root)}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        edges: set[str] = set()
        for node in _import_nodes(ast.parse(path.read_text()).body, in_functions=in_functions):
            if isinstance(node, ast.Import):
                edges |= {alias.name for alias in node.names if alias.name in paths}
                continue
            base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            module = (".".join(base[:len(base) - node.level + 1] + [node.module or ""]).strip(".")
                      if node.level else node.module or "")
            for alias in node.names:
                if f"{module}.{alias.name}" in paths:
                    edges.add(f"{module}.{alias.name}")
                elif module in paths:
                    edges.add(module)
        graph[name] = edges - {name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan): each holds at least one cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_the_cycle_finder_sees_a_cycle() -> None:
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_among_gateway_modules() -> None:
    graph = import_graph(in_functions=False)
    assert len(graph) > 200 and "gateway.cli.main" in graph["gateway.__main__"]
    assert import_cycles(graph) == []


# Imports deferred into a function (for start-up time, as the package face's ``gateway.Gateway``) close no cycle
# either: a deferred import that would is a shared piece to move into a module both sides import.


def test_deferred_imports_close_no_cycle() -> None:
    graph = import_graph(in_functions=True)
    assert "gateway.service" in graph["gateway"]  # ``gateway.Gateway``, imported on first use, is seen
    assert import_cycles(graph) == []


def test_the_cycle_finder_sees_cycles_closed_by_deferred_imports(tmp_path: Path) -> None:
    """The shapes the gateway had: a package face whose lazy attribute imports a module that imports a name of
    the package back, and two modules of which one imports the other inside a function."""
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("__version__ = '1'\n\ndef __getattr__(name):\n"
                                      "    from pkg.service import Service\n    return Service\n")
    (root / "service.py").write_text("from pkg import __version__\n\nclass Service: ...\n")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "cache.py").write_text("class Snapshot: ...\n\ndef view():\n"
                                           "    from .scope import scoped\n    return scoped\n")
    (root / "sub" / "scope.py").write_text("def scoped():\n    from pkg.sub.cache import Snapshot\n"
                                           "    return Snapshot()\n")
    # an import for annotations only never runs: no cycle
    (root / "sub" / "model.py").write_text("from pkg.sub import words\n")
    (root / "sub" / "words.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                           "    from pkg.sub.model import Model\n")
    cycles = [["pkg", "pkg.service"], ["pkg.sub.cache", "pkg.sub.scope"]]
    assert sorted(import_cycles(import_graph(in_functions=True, root=root))) == cycles
    assert import_cycles(import_graph(in_functions=False, root=root)) == []


# --- import graph: entry points go through Gateway; no cycles (issue 26) ------------------------------------

def _dotted(path: Path, root: Path) -> str:
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


def package_modules(root: Path) -> dict[str, Path]:
    return {_dotted(p, root): p for p in sorted(root.rglob("*.py"))}


# The command line and the evaluation are entry points: what a running gateway does, they ask Gateway
# (gateway.service) for. None imports the stages, the guarded execution, the store or the state bag.
ENTRY_POINTS = ("cli/", "eval/")
BEHIND_GATEWAY = ("gateway.pipeline", "gateway.execute", "gateway.store", "gateway.state")


def _behind_gateway(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in BEHIND_GATEWAY)


def test_entry_points_reach_the_gateway_only_through_gateway() -> None:
    known = package_modules(PACKAGE)
    found = set()
    checked = 0
    for path in modules():
        rel = str(path.relative_to(PACKAGE))
        if any(rel.startswith(folder) for folder in ENTRY_POINTS):
            checked += 1
            found |= {(rel, name) for name in gateway_imports(path, known) if _behind_gateway(name)}
    assert checked > 20, checked
    assert not found, f"entry points import what Gateway holds: {sorted(found)}; add a Gateway method (gateway/service.py)"


def test_the_entry_point_check_resolves_every_import_spelling(tmp_path: Path) -> None:
    root = tmp_path / "gateway"
    (root / "store").mkdir(parents=True)
    for name in ("__init__.py", "command.py", "store/__init__.py", "store/api_keys.py", "store/command.py"):
        (root / name).write_text("")
    (root / "command.py").write_text("def f():\n    from gateway.store import api_keys\n")
    (root / "store" / "command.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                               "    from . import api_keys\n")
    known = package_modules(root)
    assert gateway_imports(root / "command.py", known) == {"gateway.store.api_keys"}
    assert gateway_imports(root / "store" / "command.py", known) == {"gateway.store.api_keys"}
    assert gateway_imports(root / "store" / "command.py", known, typing_only=False) == set()


def test_the_commands_constants_match_the_stores() -> None:
    """The commands spell out two constants of the store they may not import."""
    from gateway.cli.examples import STATUSES
    from gateway.cli.magic import SHIPPED
    from gateway.store import examples, guidelines

    assert STATUSES == examples.STATUSES
    assert SHIPPED == guidelines.SHIPPED


# --- one front door (issue 26): entry points call Gateway methods, nothing below them ----------------------

# The layers a route, an MCP tool or the console API may not reach into: they call ``Gateway`` (gateway.service),
# which decides (authorization once) and hands back results, the types they hold and their wire encodings.
BELOW_THE_DOOR = ("gateway.pipeline", "gateway.execute", "gateway.store", "gateway.state")
# Server plumbing, not routing: the app's lifespan hands the resources to the authenticating middleware and the
# fast paths (Gateway.serving_state); the rest of the plumbing lives in gateway/serving/.
SERVING = {"api/app.py"}
# How adapters name the Gateway they hold: gateway, gw, call.gateway, app.state.service ...
GATEWAY_NAMES = {"gateway", "gw", "service", "call_gateway"}


def entry_points() -> list[Path]:
    """The routing modules of the HTTP API, the MCP server and the console API."""
    found = [*(PACKAGE / "api").rglob("*.py"), *(PACKAGE / "mcp").rglob("*.py"), *(PACKAGE / "console").rglob("*.py")]
    return sorted(p for p in found if str(p.relative_to(PACKAGE)) not in SERVING)


def _terminal(node: ast.expr) -> str | None:
    """The name an expression ends in: ``x`` of ``a.b.x`` or of ``getattr(a, "x", ...)``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)):
        return str(node.args[1].value)
    return None


def around_the_door(source: str, package: str = "gateway") -> list[str]:
    """What ``source`` (a module of ``package``) does that only Gateway may: import a layer below it, touch a
    Gateway's resources (``.state``, ``._state``, any private member, ``serving_state``) or the resources the
    app keeps for its plumbing (``app.state.gateway``)."""
    out: list[str] = []
    for node in ast.walk(ast.parse(source)):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the package
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            modules = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        for name in modules:
            if any(name == layer or name.startswith(layer + ".") for layer in BELOW_THE_DOOR):
                out.append(f"line {node.lineno}: imports {name}")
                break
        if isinstance(node, ast.Attribute):
            owner = _terminal(node.value)
            if owner in GATEWAY_NAMES and (node.attr == "state" or (node.attr.startswith("_")
                                                                    and not node.attr.startswith("__"))):
                out.append(f"line {node.lineno}: touches {owner}.{node.attr}")
            if node.attr == "serving_state":
                out.append(f"line {node.lineno}: takes the serving layer's resources")
            if node.attr == "gateway" and owner == "state":
                out.append(f"line {node.lineno}: takes the resources the app keeps for its plumbing")
        if isinstance(node, ast.Call) and _terminal(node.func) == "getattr" and len(node.args) >= 2:
            target, name = node.args[0], node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and (
                    name.value in {"state", "_state", "_live", "serving_state"} and _terminal(target) in GATEWAY_NAMES
                    or name.value == "gateway" and _terminal(target) == "state"):
                out.append(f"line {node.lineno}: getattr(..., {name.value!r})")
    return out


def test_the_door_check_sees_each_way_around_it() -> None:
    """The check below must catch every spelling of going around Gateway, or it proves nothing."""
    caught = [
        "from gateway.pipeline import ask",
        "import gateway.store.guidelines",
        "from gateway import state",
        "from gateway.execute.values import dumps",
        "from ..store import guidelines",
        "def f():\n    from gateway.state import GatewayState",
        "x = gateway.state.store",
        "x = call.gateway.state.target('demo')",
        "x = gw._state",
        "x = gateway._may_change(p, None)",
        "x = request.app.state.service.state",
        "x = request.app.state.gateway.auth",
        "x = getattr(getattr(app, 'state', None), 'gateway', None)",
        "x = getattr(gateway, '_state')",
        "x = gateway.serving_state()",
    ]
    for source in caught:
        assert around_the_door(source, package="gateway.api"), source
    allowed = ["from gateway.service import Gateway, to_json", "x = request.state.request_id",
               "x = dialog.state", "x = app.state.service", "x = gateway.whoami(p)"]
    for source in allowed:
        assert not around_the_door(source, package="gateway.api"), source


def test_entry_points_call_gateway_only() -> None:
    """Routes, MCP tools and the console API translate a request into a Gateway call and its result (or
    error) back; what they may do and what they read is decided behind Gateway, once for every transport."""
    checked = entry_points()
    assert len(checked) > 20 and PACKAGE / "api" / "routes_ask.py" in checked and PACKAGE / "mcp" / "tools.py" in checked
    offenders = {}
    for path in checked:
        rel = path.relative_to(PACKAGE)
        package = ".".join(("gateway", *rel.parts[:-1]))
        found = around_the_door(path.read_text(), package)
        if found:
            offenders[str(rel)] = found
    assert not offenders, offenders


def test_gateway_keeps_its_resources_private() -> None:
    from gateway.service import Gateway

    assert not hasattr(Gateway, "state"), "Gateway.state is public again: add a Gateway method instead"
