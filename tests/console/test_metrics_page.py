"""The console's Metrics page in headless Chromium: the demo's semantic model as a client key sees it
(definitions, synonyms, dimensions, where each metric is used), and nothing the rules hide."""

from __future__ import annotations

from typing import Any

import pytest

from tests.console.conftest import Console
from tests.console.test_browser import console_errors, find, finds, screenshot, sign_in, visible, wait

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def test_a_client_sees_the_metrics_their_definitions_and_where_they_are_used(browser: Any, console: Console) -> None:
    sign_in(browser, console, console.keys["client"])
    browser.get(console.url + "#metrics")
    wait(browser, visible("#metrics-table tbody tr"), "the metrics")
    status = find(browser, "#metrics-status").text
    assert "metric(s)" in status and "dimension(s)" in status
    revenue = find(browser, "#metrics-table tr[data-metric='revenue']").text
    assert "SUM(orders.total_amount) FILTER(WHERE orders.status <> 'cancelled')" in revenue
    assert "sales, turnover" in revenue and "region" in revenue
    assert "metric average_order_value" in revenue and "metric merchandise_revenue" in revenue  # used by
    assert "verified question" in revenue
    dimensions = [row.get_attribute("data-dimension") for row in finds(browser, "#dimensions-table tbody tr")]
    assert "ordered_at" in dimensions and "region" in dimensions
    page = find(browser, "#metrics-body").text
    assert "salary" not in page and "email" not in page  # hidden by rules/demo.yaml
    screenshot(browser, "metrics")
    assert console_errors(browser) == []
