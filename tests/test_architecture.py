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


# --- one front door (issue 26): entry points call Gateway methods, nothing below them ----------------------

# The layers a route, an MCP tool or the console API may not reach into: they call ``Gateway`` (gateway.service),
# which decides (authorization once) and hands back results, the types they hold and their wire encodings.
BELOW_THE_DOOR = ("gateway.pipeline", "gateway.execute", "gateway.store", "gateway.state")
# Server plumbing, not routing: the app's lifespan hands the resources to the authenticating middleware and the
# fast paths (Gateway.serving_state); these move to their own package (issue 26, item 4).
SERVING = {"api/app.py", "api/fastpath.py", "api/server.py", "api/middleware.py"}
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
