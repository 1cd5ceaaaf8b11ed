"""The console in headless Chromium against a real gateway (access control on, the demo database, the
scripted LLM): sign in, ask with streaming, table and chart, feedback, review an example as a dba, diff and
activate a guideline version, watch the status page count, and ask with the keyboard alone.

The tests of this module share one browser and run in order (the dba reviews the example the analyst sent).
Every wait is on a condition in the page, never on time. Each page's screenshot lands in docs/console/.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import asyncpg
import httpx
import pytest

from gateway.store import guidelines
from tests.console.conftest import REFLECTED, SCREENSHOTS, Console

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
TIMEOUT_S = 60  # a bound on each wait for a page condition; the condition decides, not the clock


def wait(driver: Any, condition: Callable[[Any], Any], what: str) -> Any:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    # A page that re-renders while a condition reads it: read again.
    return WebDriverWait(driver, TIMEOUT_S, ignored_exceptions=(StaleElementReferenceException,)).until(
        condition, message=f"waited for {what}")


def find(driver: Any, css: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, css)


def finds(driver: Any, css: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(driver.find_elements(By.CSS_SELECTOR, css))


def visible(css: str) -> Callable[[Any], Any]:
    """The first displayed element matching ``css``, once the page shown has settled (``#page`` is not
    ``aria-busy``: a page binds its forms' handlers after loading what it needs)."""
    def check(driver: Any) -> Any:
        if finds(driver, "#page[aria-busy=true]"):
            return False
        found = [e for e in finds(driver, css) if e.is_displayed()]
        return found[0] if found else False
    return check


def screenshot(driver: Any, name: str) -> None:
    """The whole page (the window grows to its height for the shot)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    height = min(int(driver.execute_script("return document.documentElement.scrollHeight")), 2400)
    driver.set_window_size(1280, max(height, 900))
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
    driver.set_window_size(1280, 900)


def nav_pages(driver: Any) -> list[str]:
    return [a.get_attribute("data-page") for a in finds(driver, "#nav a") if a.is_displayed()]


def sign_in(driver: Any, console: Console, key: str) -> None:
    driver.get(console.url)
    field = wait(driver, visible("#key"), "the sign-in form")
    field.send_keys(key)
    find(driver, "#signin-form button").click()
    wait(driver, visible("#nav"), "the pages offered after sign-in")


def ask(driver: Any, question: str) -> Any:
    box = wait(driver, visible("#ask-q"), "the question box")
    box.clear()
    box.send_keys(question)
    find(driver, "#ask-submit").click()
    return wait(driver, visible("#answer-status"), f"the answer to {question!r}")


def console_errors(driver: Any) -> list[str]:
    """Errors the page logged (a CSP violation, a failed module): none may occur."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"
            and "401" not in e["message"]]


def test_sign_in_offers_only_the_pages_of_the_keys_role(browser: Any, console: Console) -> None:
    browser.get(console.url)
    wait(browser, visible("#key"), "the sign-in form")
    screenshot(browser, "sign-in")
    find(browser, "#key").send_keys("nl2sql_notakey_notasecret")
    find(browser, "#signin-form button").click()
    message = wait(browser, lambda d: find(d, "#signin-error").text, "the refusal in words")
    assert "did not accept" in message
    assert browser.execute_script("return sessionStorage.getItem('nl2sql.key')") is None
    sign_in(browser, console, console.keys["client"])
    assert nav_pages(browser) == ["ask", "sql", "trusted", "metrics", "status"]  # schema, rules and guideline need a dba key
    assert "console-client (client)" in find(browser, "#who").text
    # The key lives in this tab's sessionStorage only.
    assert browser.execute_script("return sessionStorage.getItem('nl2sql.key')") == console.keys["client"]
    assert browser.execute_script("return localStorage.length") == 0
    browser.get(console.url + "#guideline")  # a page the role may not use: said in words, not offered
    notice = wait(browser, visible("#notice"), "the notice about the role")
    assert "needs a dba key" in notice.text
    assert find(browser, "#nav a[aria-current=page]").get_attribute("data-page") == "ask"
    assert console_errors(browser) == []


def test_ask_streams_attempts_then_table_and_chart(browser: Any, console: Console) -> None:
    browser.get(console.url + "#ask")
    status = ask(browser, REFLECTED)
    assert status.text == "ok"
    attempts = finds(browser, ".attempts > li")
    assert len(attempts) == 2  # the wrong first SQL, then the reflection that fixed it
    assert "did not pass" in attempts[0].text and "exec_error" in attempts[0].text
    assert "passed" in attempts[1].text and "reflection" in attempts[1].text
    assert finds(attempts[1], ".t-kw")  # the SQL is highlighted
    assert "LLM" in attempts[1].find_element("css selector", ".timings").text
    rows = finds(browser, ".answer table.grid tbody tr")
    assert len(rows) >= 2
    assert find(browser, "svg.chart-bar")  # a category and a measure: bars
    live = find(browser, "#main .live")  # the aria-live line screen readers read out
    assert live.text == f"Answer: ok, {len(rows)} rows."
    # Sort by the measure, descending on the second click.
    header = finds(browser, ".answer thead th")[1]
    header.find_element("css selector", "button").click()
    header.find_element("css selector", "button").click()
    assert header.get_attribute("aria-sort") == "descending"
    values = [float(r.find_elements("css selector", "td")[1].text) for r in finds(browser, ".answer tbody tr")]
    assert values == sorted(values, reverse=True)
    assert live.text == f"Sorted by {header.text.split()[0]}, descending."
    screenshot(browser, "ask")
    status = ask(browser, "What was the revenue per month in 2024?")
    assert find(browser, "svg.chart-line")  # a time dimension: a line
    toggle = find(browser, "#chart-toggle")
    toggle.click()
    assert not find(browser, ".chart-box").is_displayed()
    toggle.click()
    assert find(browser, ".chart-box").is_displayed()
    history = [li.text for li in finds(browser, "#ask-history li")]
    assert len(history) == 2 and REFLECTED in history[1]  # newest first
    # On a tablet in portrait the history moves below the answer and nothing scrolls sideways.
    browser.set_window_size(820, 1180)
    try:
        wait(browser, lambda d: find(d, "#ask-history").rect["y"] > find(d, "#ask-form").rect["y"] + 100,
             "the history stacked below")
        assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        browser.set_window_size(1280, 900)
    assert console_errors(browser) == []


def test_feedback_with_corrected_sql_proposes_an_example(browser: Any, console: Console) -> None:
    ask(browser, "Which are the ten best-selling products by units?")
    find(browser, "#fb-wrong").click()
    corrected = wait(browser, visible("#fb-sql"), "the corrected SQL box")
    assert "SELECT" in corrected.get_attribute("value")  # starts from the answer's SQL
    corrected.clear()
    corrected.send_keys("SELECT p.name, sum(oi.quantity) AS units FROM order_items oi JOIN products p "
                        "ON p.product_id = oi.product_id GROUP BY p.name ORDER BY units DESC LIMIT 5")
    find(browser, "#fb-note").send_keys("The report needs the top five only.")
    find(browser, "#fb-send").click()
    result = wait(browser, lambda d: find(d, ".fb-result").text, "the feedback receipt")
    assert "recorded as incorrect" in result and "proposed" in result


def test_keyboard_alone_completes_an_ask(browser: Any, console: Console) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    browser.get(console.url + "#status")
    wait(browser, visible("#status-body"), "the status page")
    browser.execute_script("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)")
    keys = ActionChains(browser)
    # From the top of the page: Tab to the Ask link, follow it, then Tab to the question, type, Enter on Ask.
    for _ in range(12):
        keys.send_keys(Keys.TAB).perform()
        if browser.switch_to.active_element.get_attribute("data-page") == "ask":
            break
    assert browser.switch_to.active_element.get_attribute("data-page") == "ask"
    keys.send_keys(Keys.ENTER).perform()
    wait(browser, lambda d: d.switch_to.active_element.get_attribute("id") == "ask-q", "focus in the question box")
    keys.send_keys("What share of orders comes from each channel?").perform()
    # Past the hint (and, once a conversation exists, its follow-up box) to the Ask button.
    for _ in range(3):
        keys.send_keys(Keys.TAB).perform()
        if browser.switch_to.active_element.get_attribute("id") == "ask-submit":
            break
    assert browser.switch_to.active_element.get_attribute("id") == "ask-submit"
    keys.send_keys(Keys.ENTER).perform()
    status = wait(browser, visible("#answer-status"), "the answer")
    assert status.text == "ok"
    # Sorting a column works from the keyboard too: the header is a button.
    keys.send_keys(Keys.TAB).perform()
    for _ in range(10):
        if browser.switch_to.active_element.get_attribute("class") == "sort":
            break
        keys.send_keys(Keys.TAB).perform()
    keys.send_keys(Keys.ENTER).perform()
    assert finds(browser, ".answer thead th")[0].get_attribute("aria-sort") == "ascending"


def test_dba_reviews_the_proposed_example_and_sees_rules_and_hidden_columns(browser: Any, console: Console) -> None:
    find(browser, "#who button").click()  # sign out
    wait(browser, visible("#key"), "the sign-in form again")
    assert browser.execute_script("return sessionStorage.getItem('nl2sql.key')") is None
    sign_in(browser, console, console.keys["dba"])
    assert nav_pages(browser) == ["ask", "sql", "schema", "rules", "trusted", "metrics", "guideline", "status"]
    browser.get(console.url + "#rules")
    check = wait(browser, visible("#rules-check"), "the rules check")
    assert "0 error(s)" in check.text and "demo.yaml" in check.text
    assert "customers.email" in find(browser, "#rules-body").text
    card = wait(browser, visible("#examples-queue .card"), "the proposed example")
    example_id = card.get_attribute("data-example")
    assert "best-selling" in card.text
    # The analyst's note, and the original answer (SQL, status, rows) beside the correction.
    assert "Analyst's note: The report needs the top five only." in card.text
    original = card.find_element("css selector", ".side-by-side .original")
    proposed = card.find_element("css selector", ".side-by-side .proposed")
    assert "LIMIT 10" in original.text and "ok, 10 rows" in original.text
    assert "LIMIT 5" in proposed.text and "Correction" in proposed.text
    screenshot(browser, "rules")
    card.find_element("css selector", "button.approve").click()
    wait(browser, visible(f"#examples-approved .card[data-example='{example_id}']"), "the example approved")
    assert not finds(browser, f"#examples-queue .card[data-example='{example_id}']")
    browser.get(console.url + "#schema")
    wait(browser, visible("#schema-body details"), "the tables")
    hidden = find(browser, ".hidden-objects").text
    assert "employees.salary" in hidden and "hidden column" in hidden
    find(browser, "#schema-body details summary").click()
    screenshot(browser, "schema")
    assert console_errors(browser) == []


async def _two_versions(store_dsn: str) -> tuple[int, int]:
    conn = await asyncpg.connect(store_dsn)
    try:
        first = await guidelines.add_candidate(conn, text="1. Count rows with count(*).\n2. Name computed columns.",
                                               parent=None, provenance=json.dumps({"trigger": "console-test", "corrections": []}))
        second = await guidelines.add_candidate(
            conn, text="1. Count rows with count(*).\n2. Name computed columns.\n3. Exclude cancelled orders from revenue.",
            parent=first, provenance=json.dumps({"trigger": "console-test", "corrections": []}))
        return first, second
    finally:
        await conn.close()


def status_of(driver: Any, version: int) -> str:
    return str(find(driver, f"#gl-versions tr[data-version='{version}']").text.split()[1])


def open_version(driver: Any, version: int) -> Any:
    """Open one version's detail; its activate (or roll back) button."""
    find(driver, f"#gl-versions tr[data-version='{version}'] button").click()
    # The page may be opening another version (the one in force) too: wait until the last one asked for is in.
    return wait(driver, lambda d: find(d, "#gl-activate") if finds(d, "#gl-detail[aria-busy=false]") and d.find_element(
        "css selector", "#gl-detail strong").text == f"Version {version}" else False, f"version {version} opened")


def test_dba_diffs_activates_and_rolls_back_a_guideline_version(browser: Any, console: Console) -> None:
    first, second = asyncio.run(_two_versions(console.store_dsn))
    browser.get(console.url + "#guideline")
    wait(browser, visible(f"#gl-versions tr[data-version='{second}']"), "the versions")
    from selenium.webdriver.support.ui import Select

    Select(find(browser, "#gl-from")).select_by_value(str(first))
    Select(find(browser, "#gl-to")).select_by_value(str(second))
    find(browser, "#gl-diff-show").click()
    added = wait(browser, visible("#gl-diff ins"), "the diff")
    assert "Exclude cancelled orders" in added.text and not finds(browser, "#gl-diff del")
    button = open_version(browser, second)
    find(browser, "#gl-force").click()
    button.click()
    wait(browser, lambda d: status_of(d, second) == "active", "the version active")
    assert "is active" in find(browser, "#gl-versions caption").text
    # Activate the other one, then roll back: a version that was active before needs no gate.
    open_version(browser, first)
    find(browser, "#gl-force").click()
    find(browser, "#gl-activate").click()
    wait(browser, lambda d: status_of(d, first) == "active" and status_of(d, second) == "retired", "version 1 active")
    rollback = open_version(browser, second)
    assert rollback.text == f"Roll back to version {second}"
    rollback.click()
    wait(browser, lambda d: status_of(d, second) == "active" and status_of(d, first) == "retired", "the rollback")
    find(browser, "#gl-diff-show").click()  # the default pair: the newest version against the one before
    wait(browser, visible("#gl-diff ins"), "the diff again")
    screenshot(browser, "guideline")
    assert console_errors(browser) == []


def test_status_page_counts_move_after_questions(browser: Any, console: Console) -> None:
    browser.get(console.url + "#status")
    counter = wait(browser, visible("#asked-total"), "the question count")
    before = int(counter.text)
    assert "Ready" in find(browser, ".ready").text
    headers = {"Authorization": f"Bearer {console.keys['client']}"}
    for question in ("How many customers never placed an order?", "Which pages get the most page views?"):
        answer = httpx.post(console.base + "/v1/ask", json={"database": "demo", "question": question},
                            headers=headers, timeout=60)
        assert answer.status_code == 200 and answer.json()["status"] == "ok"
    wait(browser, lambda d: int(find(d, "#asked-total").text) >= before + 2, "the refreshed count")
    assert "demo" in find(browser, "#st-dbs").text
    assert find(browser, "#st-llm").text  # LLM latency by purpose
    screenshot(browser, "status")
    assert console_errors(browser) == []
