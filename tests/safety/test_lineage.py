"""Hidden data through every scope: each lineage case again inside a subquery, a CTE, a LATERAL and an EXISTS.

The case files hold the forms (``blocked/lineage.sql`` with its twins in ``allowed/lineage.sql``, an
attacker's review in ``attack.sql`` under both, the older ``blocked/hidden.sql`` and the catalog cases); here each is nested, since a form refused at the top level
must stay refused wherever it hides, and an allowed twin must stay allowed. One exception is exact: directly
under EXISTS, a plain SELECT's ``*`` is never evaluated, so there the form must get the verdict of the same
query with the star replaced by a constant (refused still when it reads hidden data elsewhere). A generated test then combines
visible and hidden column references with aliases, quoting and scopes, and compares the verdict with
which columns the query names.
"""

from __future__ import annotations

import pglast
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pglast import ast, enums
from pglast.stream import RawStream

from gateway.safety import Policy, check
from gateway.safety.lineage import bind
from gateway.safety.statement import read
from tests.safety.cases import Case, load

WRAPPERS = {
    "subquery": "SELECT * FROM ({sql}) AS wrapped",
    "cte": "WITH wrapped AS ({sql}) SELECT * FROM wrapped",
    "lateral": "SELECT w.* FROM (SELECT 1 AS one) AS base CROSS JOIN LATERAL ({sql}) AS w",
    "exists": "SELECT 1 AS one WHERE EXISTS ({sql})",
}
_FILES = ("hidden: ", "lineage: ", "catalogs: ", "attack: ")
BLOCKED = [c for c in load("blocked") if c.id.startswith(_FILES) and not c.sql.lstrip().upper().startswith("EXPLAIN")]
ALLOWED = [c for c in load("allowed") if c.id.startswith(_FILES) and not c.sql.lstrip().upper().startswith("EXPLAIN")]


def _nested(cases: list[Case]) -> list[tuple[Case, str, str]]:
    return [(c, name, wrapper.format(sql=c.sql)) for c in cases for name, wrapper in WRAPPERS.items()]


_SHAPES_ROWS = ("groupClause", "havingClause", "distinctClause", "windowClause", "sortClause", "limitCount",
                "limitOffset", "valuesLists")


def _stars_as_constants(sql: str) -> str | None:
    """``sql`` with each ``*`` / ``t.*`` select-list item replaced by ``1``, when it is a plain SELECT whose
    rows do not depend on its select list (what EXISTS sees of it the same); None for any other query."""
    (raw,) = pglast.parse_sql(sql)
    stmt = raw.stmt
    if not isinstance(stmt, ast.SelectStmt) or stmt.op != enums.SetOperation.SETOP_NONE:
        return None
    if any(getattr(stmt, key) for key in _SHAPES_ROWS):
        return None
    one = ast.ResTarget(val=ast.A_Const(val=ast.Integer(1)))
    items = stmt.targetList or ()
    stars = [isinstance(t.val, ast.ColumnRef) and isinstance(t.val.fields[-1], ast.A_Star) and not t.indirection
             for t in items]
    if not any(stars):
        return None
    stmt.targetList = tuple(one if star else t for t, star in zip(items, stars, strict=True))
    return str(RawStream()(stmt))


@pytest.mark.parametrize(("case", "where", "sql"), _nested(BLOCKED),
                         ids=[f"{c.id} [{w}]" for c, w, _ in _nested(BLOCKED)])
def test_blocked_wherever_nested(case: Case, where: str, sql: str) -> None:
    verdict = check(sql, case.policy)
    twin = _stars_as_constants(case.sql) if where == "exists" else None
    if twin is not None:
        # EXISTS never evaluates a plain SELECT's select list: a star there must weigh exactly what a
        # constant weighs, so the form is refused only if it reads hidden data elsewhere.
        expected = check(WRAPPERS["exists"].format(sql=twin), case.policy)
        # (Compared on hidden_column: the twin is pglast's deparse, which sqlglot may read differently.)
        why = (sql, twin, verdict.findings, expected.findings)
        assert ("hidden_column" in verdict.codes) == ("hidden_column" in expected.codes), why
        assert verdict.allowed or not expected.allowed, why
        return
    assert not verdict.allowed, sql
    assert set(case.expect) <= set(verdict.codes), (sql, verdict.findings)


def test_a_star_under_exists_weighs_what_a_constant_weighs() -> None:
    stars = [c for c in BLOCKED if _stars_as_constants(c.sql) is not None]
    # Both outcomes occur: stars that were the only hidden read, and stars beside a hidden predicate.
    assert any(check(WRAPPERS["exists"].format(sql=c.sql), c.policy).allowed for c in stars)
    assert any(not check(WRAPPERS["exists"].format(sql=c.sql), c.policy).allowed for c in stars)
    assert _stars_as_constants("SELECT DISTINCT * FROM employees") is None
    assert _stars_as_constants("SELECT * FROM employees UNION SELECT * FROM employees") is None
    assert _stars_as_constants("SELECT e.*, 2 FROM employees e WHERE e.salary > 1") == (
        "SELECT 1, 2 FROM employees AS e WHERE e.salary > 1")


@pytest.mark.parametrize(("case", "where", "sql"), _nested(ALLOWED),
                         ids=[f"{c.id} [{w}]" for c, w, _ in _nested(ALLOWED)])
def test_allowed_twin_wherever_nested(case: Case, where: str, sql: str) -> None:
    verdict = check(sql, case.policy)
    assert verdict.allowed, (sql, verdict.findings)


def test_enough_cases_and_twins() -> None:
    assert len([c for c in BLOCKED if c.id.startswith("lineage: ")]) >= 100
    assert len([c for c in ALLOWED if c.id.startswith("lineage: ")]) >= 50


def _reads(sql: str) -> set[tuple[str | None, str | None]]:
    stmt, findings = read(sql)
    assert stmt is not None, findings
    return {(r.table, r.column) for r in bind(stmt.query)}


def test_bind_follows_column_alias_lists_and_join_aliases() -> None:
    assert ("employees", None) in _reads("SELECT e.s FROM employees AS e(i, s)")
    assert ("customers", None) in _reads("SELECT j FROM (customers c JOIN regions r USING (region_id)) j")
    # Derived tables contribute nothing of their own: their outputs were bound inside them.
    assert _reads("SELECT s.x FROM (SELECT 1 AS x) s") == set()
    assert ("regions", "name") in _reads("SELECT r.name FROM regions r")


def test_message_names_the_clause_and_the_column() -> None:
    policy = Policy(hidden_columns=frozenset({"employees.salary"}))
    (finding,) = check("SELECT first_name FROM employees ORDER BY salary", policy).findings
    assert finding.code == "hidden_column" and "ORDER BY" in finding.message and "employees.salary" in finding.message
    assert finding.position is not None


_POLICY = Policy(hidden_columns=frozenset({"customers.email", "employees.salary"}))
_VISIBLE = {"customers": ["first_name", "city", "segment"], "employees": ["first_name", "department"]}
_HIDDEN = {"customers": "email", "employees": "salary"}


@st.composite
def _query(draw: st.DrawFn) -> tuple[str, bool]:
    table = draw(st.sampled_from(sorted(_VISIBLE)))
    alias = draw(st.sampled_from(["t", "x", "orders", "Q", table]))
    leak = draw(st.booleans())
    column = _HIDDEN[table] if leak else draw(st.sampled_from(_VISIBLE[table]))
    spelled = draw(st.sampled_from([column, column.upper(), f'"{column}"']))
    ref = draw(st.sampled_from([spelled, f"{alias}.{spelled}", f"({alias}).{spelled}"]))
    clause = draw(st.sampled_from([
        "SELECT {ref} FROM {t} AS {a}",
        "SELECT count(*) FROM {t} AS {a} WHERE {ref} IS NOT NULL",
        "SELECT 1 FROM {t} AS {a} ORDER BY {ref}",
        "SELECT count(*) FROM {t} AS {a} GROUP BY {ref}",
        "SELECT max({ref}::text) FROM {t} AS {a}",
        "SELECT row_number() OVER (PARTITION BY {ref}) FROM {t} AS {a}",
    ]))
    sql = clause.format(ref=ref, t=table, a=f'"{alias}"' if alias == "Q" else alias)
    if alias == "Q":  # a quoted upper-case alias is referenced as written
        sql = sql.replace("Q.", '"Q".').replace("(Q)", '("Q")')
    wrapper = draw(st.sampled_from(["{sql}", *WRAPPERS.values()]))
    return wrapper.format(sql=sql), leak


@settings(max_examples=400, deadline=None)
@given(_query())
def test_generated_queries_refused_exactly_when_they_name_a_hidden_column(item: tuple[str, bool]) -> None:
    sql, leak = item
    verdict = check(sql, _POLICY)
    if leak:
        assert "hidden_column" in verdict.codes, sql
    else:
        assert verdict.allowed, (sql, verdict.findings)
