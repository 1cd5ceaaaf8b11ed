"""Every case file: blocked cases carry their expected codes, allowed cases are allowed."""

from __future__ import annotations

import pytest

from gateway.safety import CODES, check
from tests.safety.cases import Case, load

BLOCKED = load("blocked")
ALLOWED = load("allowed")


@pytest.mark.parametrize("case", BLOCKED, ids=[c.id for c in BLOCKED])
def test_blocked(case: Case) -> None:
    verdict = check(case.sql, case.policy)
    assert not verdict.allowed, case.sql
    assert set(case.expect) <= set(verdict.codes), (case.sql, verdict.findings)
    for finding in verdict.findings:
        assert finding.code in CODES
        assert finding.message
        if finding.position is not None:
            assert 0 <= finding.position <= len(case.sql)


@pytest.mark.parametrize("case", ALLOWED, ids=[c.id for c in ALLOWED])
def test_allowed(case: Case) -> None:
    verdict = check(case.sql, case.policy)
    assert verdict.allowed, (case.sql, verdict.findings)
    assert verdict.statement_kind in ("select", "explain")


def test_case_files_are_not_empty() -> None:
    assert len(BLOCKED) > 150 and len(ALLOWED) > 50


def test_every_code_is_exercised_by_a_blocked_case() -> None:
    expected = {code for case in BLOCKED for code in case.expect}
    assert set(CODES) <= expected, set(CODES) - expected


def test_every_blocked_function_reason_has_a_case() -> None:
    reasons = set()
    for case in BLOCKED:
        for finding in check(case.sql, case.policy).findings:
            if finding.code == "function_blocked":
                reasons.add(finding.message.rsplit("(", 1)[1].rstrip(")."))
    assert {"sleep", "file_access", "large_object", "dblink", "config_access", "advisory_lock", "sequence",
            "backend_signal", "sql_in_text"} <= reasons
