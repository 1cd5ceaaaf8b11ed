"""The console's everyday work in headless Chromium (issue 30): the SQL page with the check's findings
inline, edit and re-run of generated SQL, starter questions, follow-ups off by default, chart type choice
and a numeric dimension, paging, no sideways scrolling at 768 px, the shipped guideline in force, and
privilege problems of the login role as a warning on the Status and Rules pages, never green.

One gateway for the module serves two databases: ``demo`` through the read-only reader role, and ``owned``
(the same data) through the superuser, as a careless first deployment would. Screenshots land in docs/console/.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest

from gateway import __version__
from gateway.auth import new_token
from gateway.store import api_keys, examples
from tests.conftest import PgServer
from tests.console.conftest import ROOT, Console, serve_console
from tests.console.test_browser import ask, console_errors, find, finds, screenshot, sign_in, visible, wait

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

STARTER = "How many customers are there?"


@pytest.fixture(scope="module")
async def work_console(pg: PgServer, demo_dsn: str, demo_admin_dsn: str,
                       tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Console]:
    folder = tmp_path_factory.mktemp("guidelines")
    shutil.copy(ROOT / "guidelines" / "default.md", folder / "default.md")
    rules = tmp_path_factory.mktemp("rules")  # the DBA edits them
    shutil.copy(ROOT / "rules" / "demo.yaml", rules / "demo.yaml")
    async with serve_console(pg, demo_dsn, folder, more={"owned": demo_admin_dsn}, rules_dir=rules) as served:
        conn = await asyncpg.connect(served.store_dsn)
        try:
            await examples.add(conn, database="demo", question=STARTER,
                               sql="SELECT count(*) AS customers FROM customers", source="dba")
            token = new_token()  # a second analyst, who must not see the first one's answers
            await api_keys.create(conn, key_id=token.key_id, name="console-other", role="client", databases=["*"],
                                  pg_role=None, secret_sha256=token.secret_sha256)
            served.keys["other"] = token.token
        finally:
            await conn.close()
        yield served


def test_sql_page_shows_findings_inline_runs_and_charts_a_month_number(browser: Any, work_console: Console) -> None:
    sign_in(browser, work_console, work_console.keys["client"])
    assert "sql" in [a.get_attribute("data-page") for a in finds(browser, "#nav a") if a.is_displayed()]
    browser.get(work_console.url + "#sql")
    box = wait(browser, visible("#sql-text"), "the SQL box")
    box.send_keys("SELECT email FROM customers")
    find(browser, "#sql-check").click()
    findings = wait(browser, visible("#sql-findings"), "the check's findings")
    assert "hidden" in findings.text.lower()  # the rules hide customers.email
    assert "error" in find(browser, "#sql-allowed").get_attribute("class")
    # In words, for an analyst: restricted, what to do; no hidden name beyond what the SQL itself says.
    note = find(browser, "#restricted-note").text
    assert "Restricted data" in note and "Ask a DBA of demo" in note
    assert "customers.email" not in note and "[hidden]" in findings.text
    find(browser, "#sql-run").click()  # refused when run too: the same findings, and the refusal in words
    wait(browser, visible("#sql-error"), "the refusal")
    assert finds(browser, "#sql-findings li")
    box.clear()
    box.send_keys("SELECT extract(month FROM ordered_at)::int AS month, count(*) AS orders FROM orders "
                  "WHERE ordered_at >= '2024-01-01' GROUP BY 1 ORDER BY 1")
    find(browser, "#sql-run").click()
    wait(browser, lambda d: "12 rows" in find(d, "#sql-summary").text if finds(d, "#sql-summary") else False,
         "the result")
    assert len(finds(browser, "#sql-output tbody tr")) == 12
    assert find(browser, "svg.chart-line")  # a month number is a dimension: a line, not "no chart"
    from selenium.webdriver.support.ui import Select

    Select(find(browser, "#chart-kind")).select_by_value("bar")
    assert find(browser, "svg.chart-bar") and not finds(browser, "svg.chart-line")
    screenshot(browser, "sql")
    # The blocked statement's 422 is the answer it should get; nothing else may fail.
    assert [e for e in console_errors(browser) if "/v1/sql" not in e or "422" not in e] == []


def test_large_results_are_paged(browser: Any, work_console: Console) -> None:
    browser.get(work_console.url + "#sql")
    box = wait(browser, visible("#sql-text"), "the SQL box")
    box.clear()
    box.send_keys("SELECT order_id, total_amount FROM orders ORDER BY order_id LIMIT 250")
    find(browser, "#sql-run").click()
    at = wait(browser, visible(".pager .page-at"), "the pager")
    assert at.text == "Rows 1–100 of 250"
    assert len(finds(browser, "#sql-output tbody tr")) == 100
    find(browser, ".page-next").click()
    find(browser, ".page-next").click()
    assert find(browser, ".page-at").text == "Rows 201–250 of 250"
    assert len(finds(browser, "#sql-output tbody tr")) == 50
    assert find(browser, ".page-next").get_attribute("disabled") is not None


def test_starter_question_then_edit_and_rerun_the_generated_sql(browser: Any, work_console: Console) -> None:
    browser.get(work_console.url + "#ask")
    starter = wait(browser, visible("#ask-starters button.starter"), "the starter questions")
    assert starter.text == STARTER
    starter.click()
    status = wait(browser, visible("#answer-status"), "the starter's answer")
    assert status.text == "ok"
    # After an answer the next question is not a follow-up unless the analyst says so.
    follow = wait(browser, visible("#ask-follow"), "the follow-up box")
    assert not follow.is_selected()
    ask(browser, "Which are the ten best-selling products by units?")
    assert not find(browser, "#ask-follow").is_selected()
    generated = find(browser, ".attempts pre.code").text
    find(browser, "#answer-edit").click()
    box = wait(browser, lambda d: find(d, "#sql-text") if finds(d, "#sql-text") and find(d, "#sql-text")
               .get_attribute("value") else False, "the SQL page with the answer's SQL")
    assert box.get_attribute("value").strip() == generated.strip()
    edited = generated.strip().rstrip(";").replace("LIMIT 10", "LIMIT 3")
    assert edited != generated.strip()
    box.clear()
    box.send_keys(edited)
    find(browser, "#sql-run").click()
    wait(browser, lambda d: "3 rows" in find(d, "#sql-summary").text if finds(d, "#sql-summary") else False,
         "the edited SQL's result")
    assert len(finds(browser, "#sql-output tbody tr")) == 3
    assert console_errors(browser) == []


def test_history_survives_a_reload_and_permalinks_reopen_and_rerun(browser: Any, work_console: Console) -> None:
    browser.get(work_console.url + "#ask")
    browser.refresh()  # a new page: what the list shows now comes from the audit, not from this tab's memory
    wait(browser, visible("#ask-history li a"), "the history from the audit")
    questions = [li.find_element("css selector", "a").text for li in finds(browser, "#ask-history li")]
    assert questions[:2] == ["Which are the ten best-selling products by units?", STARTER]  # newest first
    link = finds(browser, "#ask-history li")[1]
    request_id = link.get_attribute("data-request")
    item = link.find_element("css selector", "a")
    item.click()
    wait(browser, visible(".answer.audited"), "the re-opened answer")
    assert browser.current_url.endswith(f"#ask/{request_id}")
    assert find(browser, "#answer-title").text == STARTER and "count(*)" in find(browser, ".answer pre.code").text
    browser.refresh()  # the permalink itself, loaded fresh
    wait(browser, visible(".answer.audited"), "the answer behind the permalink")
    find(browser, "#answer-rerun").click()
    status = wait(browser, visible(".answer:not(.audited) #answer-status"), "the answer asked again")
    assert status.text == "ok" and finds(browser, ".answer table.grid tbody tr")
    screenshot(browser, "history")
    # Another analyst gets nothing behind the link, in the page and over the API.
    headers = {"Authorization": f"Bearer {work_console.keys['other']}"}
    theirs = httpx.get(f"{work_console.base}/v1/answers/{request_id}", headers=headers, timeout=30)
    assert theirs.status_code == 404 and theirs.json()["code"] == "unknown_request"
    assert httpx.get(f"{work_console.base}/v1/history", headers=headers, timeout=30).json()["answers"] == []
    mine = httpx.get(f"{work_console.base}/v1/answers/{request_id}",
                     headers={"Authorization": f"Bearer {work_console.keys['client']}"}, timeout=30)
    assert mine.status_code == 200 and mine.json()["yours"] is True
    find(browser, "#who button").click()
    sign_in(browser, work_console, work_console.keys["other"])
    browser.get(work_console.url + f"#ask/{request_id}")
    missing = wait(browser, visible("#answer-missing"), "the refusal behind another's link")
    assert "no answer under this link" in missing.text
    assert STARTER not in find(browser, "#ask-history").text
    assert [e for e in console_errors(browser) if "/v1/answers/" not in e or "404" not in e] == []
    find(browser, "#who button").click()
    sign_in(browser, work_console, work_console.keys["client"])


def test_no_sideways_scrolling_at_768_px(browser: Any, work_console: Console) -> None:
    browser.set_window_size(768, 1000)
    try:
        for page, ready in (("ask", "#ask-q"), ("sql", "#sql-text"), ("status", "#status-ready")):
            browser.get(work_console.url + f"#{page}")
            wait(browser, visible(ready), f"the {page} page")
            if page == "ask":
                ask(browser, "What was the revenue per month in 2024?")
                wait(browser, visible(".chart-box"), "the chart")
            width = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
            assert width[0] <= width[1], f"{page}: {width}"
    finally:
        browser.set_window_size(1280, 900)


def test_status_warns_when_a_login_role_is_a_superuser(browser: Any, work_console: Console) -> None:
    browser.get(work_console.url + "#status")
    ready = wait(browser, visible("#status-ready"), "readiness")
    wait(browser, lambda d: "superuser" in find(d, "#status-ready").text, "the privilege warning")
    ready = find(browser, "#status-ready")
    assert "warn" in ready.get_attribute("class").split() and "ok" not in ready.get_attribute("class").split()
    assert ready.find_element("css selector", "strong").text == "Ready, with warnings"
    assert "owned" in ready.text and "demo:" not in ready.text
    assert find(browser, "#st-latency") and finds(browser, "#st-latency svg.spark")
    assert "owned" in find(browser, "#st-pools").text
    assert find(browser, "#st-version").text == __version__
    assert find(browser, "#st-llm-model").text == "scripted-model"  # a client key: the model, not the endpoint
    screenshot(browser, "status-warning")
    assert console_errors(browser) == []


def test_rules_page_is_not_green_above_role_problems(browser: Any, work_console: Console) -> None:
    find(browser, "#who button").click()
    sign_in(browser, work_console, work_console.keys["dba"])
    browser.get(work_console.url + "#rules")
    wait(browser, visible("#rules-check"), "the rules check")
    from selenium.webdriver.support.ui import Select

    Select(find(browser, "#rules-db")).select_by_value("owned")
    check = wait(browser, lambda d: find(d, "#rules-check") if "role" in find(d, "#rules-check").text else False,
                 "the owned database's check")
    assert "ok" not in check.get_attribute("class").split()
    assert "superuser" in find(browser, "#rules-body").text


def test_a_dba_hides_a_column_from_the_rules_page_and_sql_on_it_is_blocked(browser: Any,
                                                                           work_console: Console) -> None:
    sql = {"database": "demo", "sql": "SELECT last_name FROM customers LIMIT 1"}
    headers = {"Authorization": f"Bearer {work_console.keys['client']}"}
    before = httpx.post(f"{work_console.base}/v1/sql", json=sql, headers=headers, timeout=30)
    assert before.status_code == 200, before.text
    browser.get(work_console.url + "#status")
    browser.get(work_console.url + "#rules")
    wait(browser, visible("#re-hidden"), "the rules editor")
    from selenium.webdriver.support.ui import Select

    Select(find(browser, "#rules-db")).select_by_value("demo")
    hidden = wait(browser, lambda d: find(d, "#re-hidden") if find(d, "#rules-edit").get_attribute("aria-label")
                  == "Edit the rules of demo" else False, "the editor for demo")
    hidden.send_keys("customers.no_such_column")
    find(browser, "#re-save").click()  # refused like `rules check` would: nothing written
    refused = wait(browser, visible("#re-error"), "the refusal")
    assert "unknown column" in refused.text
    hidden.clear()
    hidden.send_keys("customers.last_name")
    find(browser, "#re-instructions").send_keys("Say which year a figure is for.")
    find(browser, "#re-save").click()
    wait(browser, lambda d: "demo/console.yaml" in find(d, "#rules-check").text, "the rules in force updated")
    assert "customers.last_name" in find(browser, "#rules-body").text
    assert "Say which year a figure is for." in find(browser, "#rules-body").text
    screenshot(browser, "rules-edit")
    after = httpx.post(f"{work_console.base}/v1/sql", json=sql, headers=headers, timeout=30)
    assert after.status_code == 422 and after.json()["code"] == "sql_blocked"
    # And in the console: the DBA's SQL page shows the finding inline.
    browser.get(work_console.url + "#sql")
    box = wait(browser, visible("#sql-text"), "the SQL box")
    box.send_keys(sql["sql"])
    find(browser, "#sql-check").click()
    assert "hidden_column" in wait(browser, visible("#sql-findings"), "the finding").text
    # A client may not edit, over the API either.
    put = httpx.put(f"{work_console.base}/v1/databases/demo/rules/console", json={"hidden_columns": []},
                    headers=headers, timeout=30)
    assert put.status_code == 403 and put.json()["code"] == "forbidden"
    assert [e for e in console_errors(browser) if "422" not in e] == []


def test_guideline_page_shows_the_shipped_text_in_force(browser: Any, work_console: Console) -> None:
    browser.get(work_console.url + "#guideline")
    text = wait(browser, visible("#gl-shipped-text"), "the shipped guideline")
    shipped = (ROOT / "guidelines" / "default.md").read_text().strip()
    assert text.text.splitlines()[0] == shipped.splitlines()[0]
    assert "In force for demo" in find(browser, "#gl-shipped-state").text
    assert console_errors(browser) == []


def test_no_sideways_scrolling_at_768_px_on_the_dba_pages(browser: Any, work_console: Console) -> None:
    browser.set_window_size(768, 1000)
    try:
        for page, ready in (("schema", "#schema-body details"), ("rules", "#rules-check"),
                            ("guideline", "#gl-shipped-text"), ("sql", "#sql-text")):
            browser.get(work_console.url + "#status")
            browser.get(work_console.url + f"#{page}")
            wait(browser, visible(ready), f"the {page} page")
            width = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
            assert width[0] <= width[1], f"{page}: {width}"
    finally:
        browser.set_window_size(1280, 900)


def test_about_names_the_llm_endpoint_to_dbas_only(work_console: Console) -> None:
    def about(role: str) -> dict[str, Any]:
        r = httpx.get(f"{work_console.base}/v1/about", headers={"Authorization": f"Bearer {work_console.keys[role]}"},
                      timeout=30)
        assert r.status_code == 200, r.text
        return dict(r.json())

    client, dba = about("client"), about("dba")
    assert client["version"] == dba["version"] == __version__ and client["store"] is True
    assert client["llm"] == {"model": "scripted-model", "endpoint": None}
    assert dba["llm"]["endpoint"].startswith("http://127.0.0.1:") and "/v1" not in dba["llm"]["endpoint"]
    assert httpx.get(f"{work_console.base}/v1/about", timeout=30).status_code == 401
    # This process's latency history: the requests above (and the module's) are in it.
    assert dba["latency"] and dba["latency"][-1]["n"] >= 1 and dba["latency"][-1]["p99_ms"] is not None


HOLD_HISTORY = """
window.__held = [];
const fetched = window.fetch.bind(window);
window.fetch = (url, options) => String(url).includes("/v1/history")
  ? new Promise((resolve) => window.__held.push(() => resolve(fetched(url, options))))
  : fetched(url, options);
"""
# Submits the ask form as a user would and says whether the browser would then send it itself (a native
# submission): the last listener, on window, sees whether any earlier one prevented that.
SUBMIT = """
let native = null;
const seen = (event) => { native = !event.defaultPrevented; };
window.addEventListener("submit", seen);
document.querySelector("#ask-form").requestSubmit();
window.removeEventListener("submit", seen);
return native;
"""


def test_a_form_used_before_its_page_is_ready_is_never_sent_natively(browser: Any, work_console: Console) -> None:
    # Runs last: the question it asks joins the history the tests above count.
    # The ask page draws its form and loads the databases, then the history, and only then binds the form's
    # handler. With the history held, the form can be filled in and sent before that: the console must not let
    # the browser send it natively (to its own URL, refused by the CSP's form-action 'none'), and says busy.
    browser.execute_script("sessionStorage.clear()")
    sign_in(browser, work_console, work_console.keys["client"])
    held = browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": HOLD_HISTORY})
    try:
        browser.get(work_console.url + "#ask")
        browser.refresh()  # a new load, with the history held
        wait(browser, lambda d: finds(d, "#page[aria-busy=true] #ask-db option")
             and d.execute_script("return window.__held.length") == 1, "the databases shown, the history held")
        find(browser, "#ask-q").send_keys("How many customers are there?")
        assert browser.execute_script(SUBMIT) is False
        assert find(browser, "#page").get_attribute("aria-busy") == "true"
        browser.execute_script("window.__held.forEach((release) => release())")
        assert ask(browser, "How many customers are there?").text == "ok"  # ready: its handler is bound
    finally:
        browser.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": held["identifier"]})
    assert browser.current_url == work_console.url + "#ask"
    assert not [e for e in console_errors(browser) if "form-action" in e]
