"""The console's Trusted page and starter questions in headless Chromium against a real gateway: a client
runs a template with other values and sees the trusted answer and the 422 in words; the Ask page offers the
templates' questions as starters and labels the answer trusted; a dba sees the suggestions from the log."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.console.conftest import Console
from tests.console.test_browser import console_errors, find, finds, screenshot, sign_in, visible, wait
from tests.templates.helpers import STATUS_TEMPLATE

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

LINES = {"database": "demo", "name": "lines_of_order", "sql": "SELECT count(*) AS lines FROM order_items "
         "WHERE order_id = $1", "parameters": [{"name": "order", "column": "order_items.order_id", "default": 1}],
         "questions": ["How many lines does order {order} have?"]}


async def test_trusted_page_starters_and_suggestions(browser: Any, console: Console) -> None:
    async with httpx.AsyncClient(base_url=console.base, timeout=30) as http:
        dba = {"Authorization": f"Bearer {console.keys['dba']}"}
        for body in (STATUS_TEMPLATE, LINES):
            made = await http.post("/v1/templates", headers=dba, json=body)
            assert made.status_code == 201, made.text

    sign_in(browser, console, console.keys["client"])
    # The Ask page: the templates' questions are starters; one click asks it.
    browser.get(console.url + "#ask")
    starter = wait(browser, visible("#ask-starters button"), "the starter questions")
    assert [b.text for b in finds(browser, "#ask-starters button")] == ["How many lines does order 1 have",
                                                                        "How many orders are shipped"]
    finds(browser, "#ask-starters button")[1].click()
    assert find(browser, "#ask-q").get_property("value") == "How many orders are shipped"
    label = wait(browser, visible("#answer-trusted"), "the trusted label on the answer")
    assert label.text == "trusted: orders_by_status" and find(browser, "#answer-status").text == "ok"
    assert "template" in find(browser, ".attempts > li").text
    del starter

    # The Trusted page: every template with its parameters, usage and a run with other values.
    browser.get(console.url + "#trusted")
    card = wait(browser, visible("[data-template=orders_by_status]"), "the template's card")
    assert "used 1 time" in card.text and "orders.status" in card.text
    from selenium.webdriver.support.ui import Select

    Select(find(browser, "#tp-orders_by_status-status")).select_by_visible_text("cancelled")
    find(browser, "[data-template=orders_by_status] button.primary").click()
    wait(browser, visible("[data-template=orders_by_status] .template-result table"), "the trusted result")
    result = find(browser, "[data-template=orders_by_status] .template-result")
    assert "trusted" in result.text and '"status":"cancelled"' in result.text.replace(" ", "")
    # A value outside the column's domain: the 422 in words.
    box = find(browser, "#tp-lines_of_order-order")
    box.clear()
    box.send_keys("two")
    find(browser, "[data-template=lines_of_order] button.primary").click()
    error = wait(browser, visible("[data-template=lines_of_order] .error"), "the refusal")
    assert "not an integer" in error.text and "template_value_invalid" in error.text
    assert not finds(browser, "#suggestions")  # a client is not shown the suggestions
    screenshot(browser, "trusted")
    # The 422 itself is the only failed load the browser reports.
    assert [e for e in console_errors(browser) if "status of 422" not in e] == []

    # A dba: the suggestions section (nothing asked often yet) and a delete button per template.
    browser.execute_script("sessionStorage.clear()")
    sign_in(browser, console, console.keys["dba"])
    browser.get(console.url + "#trusted")
    wait(browser, visible("#suggestions p"), "the suggestions section")
    assert "No question is asked often enough yet." in find(browser, "#suggestions").text
    assert len(finds(browser, "[data-template] button.reject")) == 2
    assert console_errors(browser) == []
