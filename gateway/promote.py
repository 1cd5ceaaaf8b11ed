"""Templates for DBAs: a verified example promoted to a template, the templates a caller may see, suggestions.

Shared by the ``/v1/templates`` routes, the MCP tools and ``nl2sql-gateway templates`` through ``Gateway``,
which decides who may do what (creating and deleting need a dba or admin). A definition is checked before it
is stored: the SQL passes the database's safety check and numbers its parameters ``$1 .. $n``, one per
parameter; each parameter is bound to a column the creator may read (its type gives the parameter's); every
example question holds each parameter's slot once; the defaults are valid values; and the template runs with
them, as the creator, through the normal check and execution path. Stored in the same transaction as nothing
else, committed before the creation is acknowledged.
"""

from __future__ import annotations

import json
from typing import Any

from pglast import parser as pg

from gateway import errors, safety
from gateway.client_sql import check_sql
from gateway.pipeline.question import Question
from gateway.pipeline.trusted import Domain, domain, forget
from gateway.state import GatewayState
from gateway.store import Store
from gateway.store import examples as stored_examples
from gateway.store import templates as stored
from gateway.store.pool import store_faults
from gateway.templates import NAME, DefinitionError, Parameter, Template, check_questions, param_type


def parameter_numbers(sql: str) -> list[int]:
    """The ``$n`` numbers ``sql`` uses (Postgres's own parse), sorted, each once.

    >>> parameter_numbers("SELECT * FROM t WHERE a = $2 OR b = $1 OR c = $2")
    [1, 2]
    """
    found: set[int] = set()
    stack: list[Any] = [json.loads(pg.parse_sql_json(sql))]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "ParamRef" in node and isinstance(node["ParamRef"], dict):
                found.add(int(node["ParamRef"].get("number", 0)))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return sorted(found)


def definition(state: GatewayState, dom: Domain, *, name: str, database: str, sql: str,
               parameters: list[dict[str, Any]], questions: list[str], description: str) -> Template:
    """The template, or ``template_invalid`` saying what to change (everything but running it)."""
    if not NAME.fullmatch(name):
        raise errors.TemplateInvalid(f"a template name is lower-case letters, digits and _, starting with a letter, "
                                     f"at most 63 characters: {name[:80]!r}", field="name")
    verdict: safety.Verdict = check_sql(state, sql, database)
    if not verdict.allowed:
        raise errors.TemplateInvalid(f"the SQL is refused by {database!r}'s safety check: "
                                     f"{', '.join(f.code for f in verdict.findings)}", field="sql",
                                     codes=[f.code for f in verdict.findings])
    try:
        numbers = parameter_numbers(sql)
    except pg.ParseError as exc:
        raise errors.TemplateInvalid(f"the SQL does not parse: {exc}", field="sql") from None
    if numbers != list(range(1, len(parameters) + 1)):
        raise errors.TemplateInvalid(f"the SQL must use $1 .. ${len(parameters)}, one per parameter (it uses "
                                     f"{', '.join(f'${n}' for n in numbers) or 'none'})", field="sql")
    params: list[Parameter] = []
    seen: set[str] = set()
    for raw in parameters:
        pname, column = str(raw.get("name", "")), str(raw.get("column", ""))
        if not NAME.fullmatch(pname) or pname in seen:
            raise errors.TemplateInvalid(f"parameter names are distinct lower-case identifiers: {pname[:80]!r}",
                                         field="parameters")
        seen.add(pname)
        column_type = dom.columns.get(column)
        if column_type is None:
            raise errors.TemplateInvalid(f"parameter {pname!r}: no readable column {column[:120]!r} (write "
                                         "table.column, or schema.table.column outside public)", field="parameters")
        kind = param_type(column_type)
        if kind is None or (raw.get("type") not in (None, kind)):
            raise errors.TemplateInvalid(f"parameter {pname!r}: column {column} is {column_type}; parameters bind "
                                         "text, integer, numeric or boolean columns, typed as the column",
                                         field="parameters")
        default = raw.get("default")
        params.append(Parameter(pname, column, kind, None if default is None else str(default)))
    try:
        slotted = check_questions([q for q in questions if q.strip()], params)
    except DefinitionError as exc:
        raise errors.TemplateInvalid(str(exc), field="questions") from None
    if any(p.default is None for p in params):
        raise errors.TemplateInvalid("every parameter needs a default value: it fills the starter question and "
                                     "the first run", field="parameters")
    return Template(name, database, sql, tuple(params), slotted, description)


async def create(state: GatewayState, store: Store, q: Question, *, name: str, sql: str | None,
                 parameters: list[dict[str, Any]], questions: list[str], description: str,
                 example_id: int | None, created_by: str, may_use: Any) -> dict[str, Any]:
    """Check, try and store a template (``q``: the creator as a question asker, for the trial run)."""
    from gateway.pipeline.loop import ask_template
    from gateway.pipeline.trusted import checked_values

    database = q.database
    if example_id is not None:
        with store_faults("the template was not created"):
            example = await stored_examples.get(store.pool, example_id)
        if example is None or not may_use(example.database) or example.database != database:
            raise errors.UnknownExample(f"there is no example {example_id} of {database!r}", example_id=example_id)
        if example.status != "approved":
            raise errors.TemplateInvalid(f"example {example_id} is {example.status}; only an approved example "
                                         "can become a template", field="example_id")
        questions = questions or [example.question]
        sql = sql or example.sql
    if not sql:
        raise errors.TemplateInvalid("a template needs its SQL (or an approved example_id to take it from)",
                                     field="sql")
    dom = await domain(state, database, q.role, q.claims)
    template = definition(state, dom, name=name, database=database, sql=sql, parameters=parameters,
                          questions=questions, description=description)
    values = checked_values(template, {}, dom)  # the defaults must be values of their columns
    try:
        trial = await ask_template(state, Question(database, template.question(values), None, 1, q.request_id,
                                                   role=q.role, claims=q.claims), template, values)
    except errors.RowPolicyClaimMissing:
        # A row-filtered table and a creator without the claims (an admin key, the CLI): no rows it could
        # read. The static checks stand; each run is checked and row-filtered for its caller anyway.
        trial = None
    if trial is not None and (trial.chosen is None or not trial.chosen.ran):
        codes = trial.chosen.codes if trial.chosen else []
        raise errors.TemplateInvalid(f"the template does not run with its defaults: {', '.join(codes)}",
                                     field="sql", codes=codes,
                                     findings=[f.as_dict() for f in trial.chosen.findings] if trial.chosen else [])
    with store_faults("the template was not created"):
        async with store.transaction() as conn:
            saved = await stored.add(conn, name=name, database=database, description=description, sql=sql,
                                     parameters=[p.as_dict() for p in template.parameters],
                                     questions=list(template.questions), example_id=example_id,
                                     created_by=created_by)
    if saved is None:
        raise errors.TemplateExists(f"there is a template named {name!r}; delete it first", template=name)
    forget(state)
    return view(Template.of(saved), dom, full=True, saved=saved)


def view(template: Template, dom: Domain, *, full: bool, saved: Any = None, claims: bool = False) -> dict[str, Any]:
    """What a caller is shown of a template. A caller under a row policy is shown no defaults nor a
    starter question with them (a DBA's default may spell another tenant's value), and only a dba or admin
    (``full``) is shown the default of a column whose rows depend on the reader (row-level security, row
    filters)."""
    shown = not claims and (full or all(dom.shows_default(p.column) for p in template.parameters))
    out: dict[str, Any] = {
        "name": template.name, "database": template.database, "description": template.description,
        "sql": template.sql, "questions": list(template.questions), "uses": template.uses,
        "parameters": [{"name": p.name, "column": p.column, "type": p.type,
                        **({"default": p.default} if shown else {}),
                        **({"values": dom.known[p.column][:50]} if p.column in dom.known else {})}
                       for p in template.parameters],
        "starter": template.question({p.name: p.default or "" for p in template.parameters}) if shown else None,
    }
    if full and saved is not None:
        out.update(created_by=saved.created_by, created_at=saved.created_at.isoformat(),
                   example_id=saved.example_id,
                   last_used_at=saved.last_used_at.isoformat() if saved.last_used_at else None)
    return out


async def listing(state: GatewayState, store: Store, databases: list[str], *, role: str | None,
                  claims: tuple[tuple[str, str], ...], full: bool) -> list[dict[str, Any]]:
    """The templates of ``databases`` available to the caller (reading nothing it may not read), by name."""
    out: list[dict[str, Any]] = []
    for database in databases:
        with store_faults("the templates could not be read"):
            rows = await stored.list_all(store.pool, database)
        if not rows:
            continue
        dom = await domain(state, database, role, claims)
        for row in rows:
            template = Template.of(row)
            if dom.available(template):
                out.append(view(template, dom, full=full, saved=row, claims=bool(claims)))
    return sorted(out, key=lambda t: t["name"])


async def available(state: GatewayState, store: Store, name: str, *, may_use: Any, role: str | None,
                    claims: tuple[tuple[str, str], ...]) -> tuple[Template, Any, Domain]:
    """The template named ``name`` if this caller may use it; ``unknown_template`` otherwise (the same
    answer whether it does not exist, belongs to another database or reads what the caller may not)."""
    with store_faults("the template could not be read"):
        row = await stored.get(store.pool, name)
    if row is None or not may_use(row.database) or row.database not in state.targets.by_name:
        raise errors.UnknownTemplate(f"there is no template {name!r}", template=name)
    template = Template.of(row)
    dom = await domain(state, row.database, role, claims)
    if not dom.available(template):
        raise errors.UnknownTemplate(f"there is no template {name!r}", template=name)
    return template, row, dom
