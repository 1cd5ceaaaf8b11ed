"""check() returns a verdict on any text and never raises (hypothesis)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.safety import Policy, Verdict, check

_TOKENS = [
    "SELECT", "FROM", "WHERE", "WITH", "RECURSIVE", "AS", "(", ")", ",", ";", "*", "t", "a.b", "'x'", "E'\\''",
    "$$", "$t$", "/*", "*/", "--", "\n", "UNION", "ALL", "JOIN", "ON", "LATERAL", "DROP", "DELETE", "INSERT",
    "INTO", "FOR UPDATE", "pg_sleep(1)", "generate_series(1, 10)", "EXPLAIN", "ANALYZE", "VALUES", "TABLE",
    "\"q\"", "U&\"a\"", "1", "1e9", "::int", "->>", "?", "@>", "CASE", "WHEN", "THEN", "END", "LIMIT", "\\",
    "'", "\"", "$1", "OPERATOR(+)", "ARRAY[", "]", "FILTER", "OVER", "GROUP BY", "ORDER BY", "CROSS JOIN",
]
_POLICY = Policy(hidden_columns=frozenset({"t.b", "a.b"}), hidden_tables=frozenset({"secret"}), max_joins=2)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_any_text_gives_a_verdict(sql: str) -> None:
    verdict = check(sql)
    assert isinstance(verdict, Verdict)
    assert verdict.allowed == (not verdict.findings)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_TOKENS), max_size=30).map(" ".join), st.booleans())
def test_token_soup_gives_a_verdict(sql: str, with_policy: bool) -> None:
    verdict = check(sql, _POLICY if with_policy else None)
    assert isinstance(verdict, Verdict)
    if verdict.allowed:
        # Whatever sqlglot thought, an allowed text is one query to Postgres, with no write or lock in it.
        assert verdict.statement_kind in ("select", "explain")
        lowered = sql.lower()
        assert "pg_sleep" not in lowered or "'" in sql or "$" in sql or "--" in sql or "/*" in sql or '"' in sql
