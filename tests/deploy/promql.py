"""Metric names in PromQL, read with a real PromQL parser, and the names ``gateway.observability.metrics`` exports.

Grafana substitutes its variables before a query reaches Prometheus, so they are replaced by values of the
same kind here ("$__rate_interval" by a duration, "$database" by a regex) before parsing.
"""

from __future__ import annotations

import re

import promql_parser
from prometheus_client.metrics import MetricWrapperBase

from gateway.observability import metrics

# Series that Prometheus itself writes for each scrape target, not the gateway.
PROMETHEUS_SERIES = frozenset({"up"})

GRAFANA_VARIABLES = {
    "$__rate_interval": "5m",
    "$__interval": "1m",
    "$__range": "1h",
}

# What a family declared with prometheus_client is exposed as, by type.
SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("", "_sum", "_count", "_created"),
    "info": ("_info",),
    "stateset": ("",),
    "enum": ("",),
}


def exported_series() -> dict[str, str]:
    """Every series name the metrics module can export, mapped to the family that exports it."""
    names: dict[str, str] = {}
    for collector in vars(metrics).values():
        if not isinstance(collector, MetricWrapperBase):
            continue
        for family in collector.describe():
            for suffix in SUFFIXES[family.type]:
                names[family.name + suffix] = family.name
    return names


def substitute_grafana_variables(expr: str) -> str:
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    # Template variables in label matchers ("$database", "${database}") stand for a regex of values.
    return re.sub(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?", ".*", expr)


def metric_names(expr: str) -> set[str]:
    """Names of every series selector in ``expr``; ValueError when it is not valid PromQL."""
    tree = promql_parser.parse(substitute_grafana_variables(expr))
    found: set[str] = set()

    def visit(node: object) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            if node.name:
                found.add(node.name)
            for matcher in node.matchers.matchers:
                if matcher.name == "__name__":
                    found.add(matcher.value)

    promql_parser.walk(tree, visit)
    return found
