"""The console's Regressions view of a guideline version, in headless Chromium against a real gateway: linked
from the version on the Guideline page, it shows the stored replay (counts, cost, each regressed question with
its reason and both SQLs, the suspect references), and a client key cannot open it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from gateway.magic.replay import RegressionReport
from gateway.settings import StoreSettings
from gateway.store import Store, guidelines, regressions
from tests.console.conftest import Console
from tests.console.test_browser import console_errors, find, finds, open_version, screenshot, visible, wait

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def answer(sql: str | None, right: bool, reason: str | None) -> dict[str, Any]:
    return {"status": "ok", "sql": sql, "error": None, "llm_calls": 2, "prompt_tokens": 900, "completion_tokens": 40,
            "latency_ms": 120.0, "right": right, "reason": reason}


def item(n: int, question: str, sql: str, verdict: str, after_sql: str, reason: str | None,
         suspect: str | None = None) -> dict[str, Any]:
    return {"key": f"example:{n}", "source": "example", "id": str(n), "database": "demo", "question": question,
            "sql": sql, "verdict": verdict, "suspect": suspect, "reference_error": None,
            "before": answer(sql, True, None), "after": answer(after_sql, reason is None, reason)}


async def _version_with_a_report(store_dsn: str) -> tuple[int, int]:
    store = await Store.open(StoreSettings(dsn=store_dsn))
    try:
        async with store.transaction() as conn:
            version = await guidelines.add_candidate(conn, text="1. Count <b>rows</b> with count(*).", parent=None,
                                                     provenance={"trigger": "console-test", "corrections": []})
        report = RegressionReport("in force", "candidate", [
            item(1, "How many orders were cancelled?", "SELECT count(*) FROM orders WHERE status = 'cancelled'",
                 "regressed", "SELECT count(*) FROM orders WHERE status = 'Cancelled'", "wrong_values"),
            item(2, "How many regions are there?", "SELECT count(*) FROM regions", "kept",
                 "SELECT count(*) FROM regions", None),
            item(3, "Name one product <img src=x onerror=alert(1)>", "SELECT name FROM products LIMIT 1", "suspect",
                 "SELECT name FROM products ORDER BY 1 LIMIT 1", "wrong_values", "nondeterministic"),
        ]).as_dict()
        report_id = await regressions.add(store.pool, report=report, subject=f"guideline v{version}",
                                          actor="key:dba", passed=False, guideline_version=version, database=None)
        return version, report_id
    finally:
        await store.close()


def sign_in(browser: Any, console: Console, role: str) -> None:
    browser.get(console.url)
    browser.execute_script("sessionStorage.clear()")
    browser.get(console.url)
    wait(browser, visible("#key"), "the sign-in form")
    find(browser, "#key").send_keys(console.keys[role])
    find(browser, "#signin-form button").click()
    wait(browser, visible("#nav"), "the pages")


def test_the_guideline_page_links_each_version_to_its_regressions(browser: Any, console: Console) -> None:
    version, report_id = asyncio.run(_version_with_a_report(console.store_dsn))
    sign_in(browser, console, "dba")
    browser.get(console.url + "#guideline")
    wait(browser, visible(f"#gl-versions tr[data-version='{version}']"), "the versions")
    open_version(browser, version)
    find(browser, "#gl-regressions").click()
    rows = wait(browser, lambda d: finds(d, "#rg-regressions tbody tr"), "the regressions table")
    assert browser.current_url.endswith(f"#regressions/{version}")
    assert find(browser, "#rg-title").text == f"Regressions of guideline version {version}"
    assert "1 regressed" in find(browser, "#rg-verdict").text and f"Report {report_id}" in find(browser, "#rg-body p").text
    (row,) = rows
    cells = [c.text for c in row.find_elements("css selector", "td")]
    assert cells == ["How many orders were cancelled?", "wrong_values",
                     "SELECT count(*) FROM orders WHERE status = 'cancelled'",
                     "SELECT count(*) FROM orders WHERE status = 'Cancelled'"]
    counts = [c.text for c in finds(browser, "#rg-counts tbody td")]
    assert counts == ["1", "0", "1", "0", "1"]  # regressed, fixed, kept, still wrong, suspect
    suspect = [c.text for c in finds(browser, "#rg-suspects tbody td")]
    assert suspect[:2] == ["Name one product <img src=x onerror=alert(1)>", "nondeterministic"]  # text, not markup
    assert not finds(browser, "#rg-suspects img")
    assert [c.text for c in finds(browser, "#rg-cost tbody tr")[1].find_elements("css selector", "td")][:2] == [
        "6", "2820"]
    screenshot(browser, "regressions")
    assert console_errors(browser) == []
    assert json.loads(browser.execute_script("return JSON.stringify(location.hash)")) == f"#regressions/{version}"


def test_a_client_key_cannot_open_the_regressions_view(browser: Any, console: Console) -> None:
    sign_in(browser, console, "client")
    browser.get(console.url + "#regressions/1")
    notice = wait(browser, lambda d: find(d, "#notice").text, "the refusal")
    assert "needs a dba key" in notice and not finds(browser, "#rg-title")
