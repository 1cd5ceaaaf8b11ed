"""The Grafana dashboard and the Prometheus alert rules query metrics the gateway really exports."""

from __future__ import annotations

import json
import re
from typing import Any

import promql_parser
import pytest
import yaml

from tests.deploy.paths import (
    ALERTS,
    COMPOSE,
    DASHBOARDS,
    DEPLOY,
    OPERATIONS,
    PROMETHEUS,
    bind_mounts,
    host_path,
)
from tests.deploy.promql import PROMETHEUS_SERIES, exported_series, metric_names

DASHBOARD = DASHBOARDS / "nl2sql-gateway.json"

# The panels issue 6 asks for, by the title they carry on the dashboard.
REQUIRED_PANELS = (
    "Request rate by endpoint",
    "Request latency",
    "First-pass vs final pass ratio",
    "Reflections by trigger",
    "Accuracy from feedback",
    "Safety blocks by code",
    "LLM latency by purpose",
    "LLM tokens",
    "LLM errors by outcome",
    "Pool usage",
    "Active guideline version",
)


def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def panels() -> list[dict[str, Any]]:
    found = []
    for panel in dashboard()["panels"]:
        found.append(panel)
        found += panel.get("panels", [])  # collapsed rows keep their panels inside
    return found


def dashboard_exprs() -> list[tuple[str, str]]:
    return [(p["title"], t["expr"]) for p in panels() for t in p.get("targets", [])]


def alert_rules() -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(ALERTS.read_text())["groups"] for rule in group["rules"]]


def all_exprs() -> list[tuple[str, str]]:
    variables = [(f"variable {v['name']}", _label_values_metric(v)) for v in dashboard()["templating"]["list"]]
    return dashboard_exprs() + [(r["alert"], r["expr"]) for r in alert_rules()] + variables


def _label_values_metric(variable: dict[str, Any]) -> str:
    match = re.fullmatch(r"label_values\((\w+),\s*\w+\)", variable["definition"])
    assert match, f"variable {variable['name']}: expected label_values(metric, label)"
    return match.group(1)


def test_unknown_metric_names_are_caught() -> None:
    # The check below is only worth something if a misspelt or missing name fails it.
    exported = exported_series()
    assert "nl2sql_requests_total" in exported and "nl2sql_request_seconds_bucket" in exported
    assert "nl2sql_request_total" not in exported
    assert "nl2sql_requests_total_bucket" not in exported
    assert metric_names('sum(rate(nl2sql_request_total{status=~"5.."}[5m])) / on() up') == {
        "nl2sql_request_total", "up"}
    with pytest.raises(ValueError):
        metric_names("sum(rate(nl2sql_requests_total[5m])")


@pytest.mark.parametrize(("where", "expr"), all_exprs(), ids=lambda v: v[:60])
def test_every_expression_parses_and_names_exported_metrics(where: str, expr: str) -> None:
    names = metric_names(expr)
    assert names, f"{where}: the expression reads no metric"
    unknown = sorted(names - set(exported_series()) - PROMETHEUS_SERIES)
    assert not unknown, f"{where}: not exported by gateway/observability/metrics.py: {unknown}"


def test_dashboard_has_every_required_panel_with_queries() -> None:
    by_title = {p["title"]: p for p in panels() if p["type"] != "row"}
    missing = [title for title in REQUIRED_PANELS if title not in by_title]
    assert not missing, f"dashboard lacks panels: {missing}"
    for title, panel in by_title.items():
        assert panel.get("targets"), f"panel {title!r} has no query"
        assert panel.get("description"), f"panel {title!r} has no description"


def test_dashboard_is_grafana_provisionable() -> None:
    dash = dashboard()
    assert dash["uid"] and dash["title"] and isinstance(dash["schemaVersion"], int)
    ids = [p["id"] for p in panels()]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    datasource = yaml.safe_load((DEPLOY / "grafana/provisioning/datasources/prometheus.yaml").read_text())
    uids = {d["uid"] for d in datasource["datasources"]}
    for panel in panels():
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] in uids, f"panel {panel['title']!r} uses an unprovisioned datasource"
    for row in (p for p in dash["panels"] if p["type"] == "row"):
        assert row["gridPos"]["w"] == 24


def test_histograms_are_read_through_buckets() -> None:
    # histogram_quantile needs the _bucket series and the `le` label kept through the aggregation.
    for where, expr in all_exprs():
        if "histogram_quantile" in expr:
            assert "_bucket" in expr and re.search(r"by \([^)]*\ble\b", expr), where


def test_alert_rules_have_the_fields_operators_need() -> None:
    rules = alert_rules()
    names = [r["alert"] for r in rules]
    assert len(names) == len(set(names)), "alert names must be unique"
    for rule in rules:
        assert set(rule) <= {"alert", "expr", "for", "keep_firing_for", "labels", "annotations"}, rule["alert"]
        assert rule["labels"]["severity"] in {"critical", "warning"}, rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
        assert rule["annotations"]["runbook"] == f"docs/operations.md#{rule['alert'].lower()}", rule["alert"]
        if "for" in rule:
            promql_parser.parse_duration(rule["for"])


def test_alert_rules_cover_what_issue_6_asks_for() -> None:
    exprs = {r["alert"]: r["expr"] for r in alert_rules()}

    def alerting_on(metric: str) -> list[str]:
        return [name for name, expr in exprs.items() if metric in metric_names(expr)]

    assert alerting_on("nl2sql_feedback_total"), "accuracy drop"
    assert alerting_on("nl2sql_reflections_total"), "reflection spike"
    assert alerting_on("nl2sql_llm_calls_total"), "LLM failures"
    assert alerting_on("nl2sql_pool_in_use") and alerting_on("nl2sql_pool_max"), "pool exhaustion"
    assert any('status=~"5.."' in exprs[n] for n in alerting_on("nl2sql_requests_total")), "5xx rate"


def test_every_alert_and_panel_has_a_runbook_entry() -> None:
    text = OPERATIONS.read_text()
    headings = {h.strip().lower() for h in re.findall(r"^#+\s+(.+)$", text, re.M)}
    for rule in alert_rules():
        assert rule["alert"].lower() in headings, f"docs/operations.md has no section for {rule['alert']}"
    for panel in panels():
        if panel["type"] != "row":
            assert panel["title"] in text, f"docs/operations.md does not explain panel {panel['title']!r}"


def test_prometheus_loads_the_alert_rules_it_is_given() -> None:
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    compose = yaml.safe_load(COMPOSE.read_text())
    mounts = bind_mounts(compose["services"]["prometheus"])
    for rule_file in config["rule_files"]:
        host = host_path(rule_file, mounts)
        assert host == ALERTS, f"{rule_file} is not deploy/prometheus/alerts.yml inside the container"
    targets = [t for job in config["scrape_configs"] for sc in job.get("static_configs", [])
               for t in sc["targets"]]
    assert "gateway:8000" in targets, "Prometheus must scrape the compose service 'gateway' on its port"

