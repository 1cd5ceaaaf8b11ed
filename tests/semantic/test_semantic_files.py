"""Native semantic model files: file:line problems, coherence checks, a stable round trip, hot reload that
fails closed, and the ``semantic check|show`` commands."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gateway import errors
from gateway.cli import app
from gateway.semantic.loading import load_model, parse_text
from gateway.semantic.model import SemanticModel
from gateway.semantic.registry import SemanticRegistry
from gateway.semantic.show import dump

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "semantic" / "demo.yaml"

SMALL = """\
entities:
  orders:
    table: orders
    primary_key: order_id
    dimensions:
      status: {}
    measures:
      n: {agg: count, expr: order_id}
metrics:
  order_count:
    measure: orders.n
"""


def problems_of(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "shop.yaml"
    path.write_text(text)
    _, problems = load_model([path])
    return [f"{Path(p.file).name}:{p.line}: {p.message}" for p in problems if p.severity == "error"]


def test_the_demo_model_loads_clean_and_round_trips_through_show() -> None:
    model, problems = load_model([DEMO])
    assert problems == []
    assert len(model.metrics) >= 12 and {"revenue", "average_order_value", "merchandise_revenue"} <= set(model.metrics)
    text = dump(model)
    again, _, found = parse_text(text, "dump")
    assert found == [] and again == model
    assert dump(again) == text


@pytest.mark.parametrize(("edit", "expected"), [
    (("n: {agg: count", "n: {agg: total"), "shop.yaml:8: entities.orders.measures.n.agg"),
    (("    table: orders\n", "    table: orders\n    colour: red\n"), "shop.yaml:4: unknown key 'entities.orders.colour'"),
    (("measure: orders.n", "measure: orders.missing"), "shop.yaml:10: metric 'order_count': unknown measure"),
    (("expr: order_id}", "expr: 'order_id +'}"), "shop.yaml:8: measure orders.n: not a SQL expression"),
    (("expr: order_id}", "expr: 'order_id + (select 1)'}"), "shop.yaml:8: measure orders.n: a subquery is not allowed"),
    (("  order_count:\n    measure: orders.n\n", "  order_count:\n    type: ratio\n    numerator: order_count\n"
      "    denominator: order_count\n"), "shop.yaml:10: metrics refer to each other in a cycle"),
    (("    dimensions:\n", "    relationships:\n      - {to: nowhere, foreign_key: x}\n    dimensions:\n"),
     "shop.yaml:6: entity orders: relationship to unknown entity 'nowhere'"),
    (("status: {}", "status: {grains: [month]}"), "shop.yaml:6: dimension 'status': only a time dimension"),
    (("metrics:\n", "metrics:\n  status:\n    measure: orders.n\n"), "shop.yaml:10: metric 'status' has the name"),
    (("metrics:\n", "metrics:\n  order_count:\n    measure: orders.n\n"), "shop.yaml:12: duplicate key 'order_count'"),
])
def test_each_problem_names_its_file_and_line(tmp_path: Path, edit: tuple[str, str], expected: str) -> None:
    assert edit[0] in SMALL
    found = problems_of(tmp_path, SMALL.replace(edit[0], edit[1], 1))
    assert any(p.startswith(expected) for p in found), found


def test_the_same_metric_in_two_files_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "a.yaml").write_text(SMALL)
    (tmp_path / "shop" / "b.yaml").write_text("metrics:\n  order_count:\n    measure: orders.n\n")
    _, problems = load_model(sorted((tmp_path / "shop").iterdir()))
    assert [str(p) for p in problems] == [f"{tmp_path / 'shop' / 'b.yaml'}:2: metric 'order_count' is already "
                                          f"defined at {tmp_path / 'shop' / 'a.yaml'}:10"]


def _bump(path: Path) -> None:
    st = path.stat()  # a second write within the same mtime tick must still be seen as a change
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_the_registry_reloads_and_keeps_the_last_good_model_when_a_file_breaks(tmp_path: Path) -> None:
    path = tmp_path / "shop.yaml"
    path.write_text(SMALL)
    registry = SemanticRegistry(tmp_path)
    try:
        assert set(registry.get("shop").metrics) == {"order_count"}
        path.write_text(SMALL + "  orders_again:\n    measure: orders.n\n")
        _bump(path)
        assert set(registry.get("shop").metrics) == {"order_count", "orders_again"}
        for broken in ("metrics: [", "", "metrics:\n  x:\n    measure: nowhere.n\n"):
            path.write_text(broken)
            _bump(path)
            assert set(registry.get("shop").metrics) == {"order_count", "orders_again"}, broken
            assert registry.status("shop").state == "last_good"
        path.unlink()
        assert set(registry.get("shop").metrics) == {"order_count", "orders_again"}  # gone is not "no model"
        path.write_text("{}")
        assert registry.get("shop") == SemanticModel()
        assert registry.status("shop").state == "ok"
        assert registry.get("other") == SemanticModel()  # no files: an empty model
    finally:
        registry.close()


def test_broken_files_with_no_good_model_before_are_refused(tmp_path: Path) -> None:
    (tmp_path / "shop.yaml").write_text("metrics:\n  x:\n    measure: nowhere.n\n")
    registry = SemanticRegistry(tmp_path)
    try:
        with pytest.raises(errors.SemanticUnavailable, match="nowhere.n"):
            registry.get("shop")
        (tmp_path / "folder.yaml").mkdir()  # a directory where a file would be
        with pytest.raises(errors.SemanticUnavailable, match="is a directory"):
            registry.get("folder")
    finally:
        registry.close()


def test_check_and_show_commands(tmp_path: Path) -> None:
    runner = CliRunner()
    (tmp_path / "shop.yaml").write_text(SMALL.replace("orders.n", "orders.nope"))
    result = runner.invoke(app, ["semantic", "check", "--database", "shop", "--semantic-dir", str(tmp_path)])
    assert result.exit_code == 1 and "shop.yaml:10: metric 'order_count': unknown measure" in result.output
    result = runner.invoke(app, ["semantic", "check", "--database", "none", "--semantic-dir", str(tmp_path)])
    assert result.exit_code == 2
    result = runner.invoke(app, ["semantic", "show", "--database", "demo", "--semantic-dir", str(DEMO.parent)])
    assert result.exit_code == 0, result.output
    assert parse_text(result.stdout, "stdout")[0] == load_model([DEMO])[0]
    result = runner.invoke(app, ["semantic", "import", str(DEMO), "--format", "native"])
    assert result.exit_code == 0 and result.stdout == dump(load_model([DEMO])[0])


def test_check_reads_the_live_schema_when_the_database_is_configured(demo_dsn: str, tmp_path: Path) -> None:
    folder = tmp_path / "semantic"
    folder.mkdir()
    text = DEMO.read_text()
    for old, new in (("      channel:\n", "      channel:\n        column: sales_channel\n"),
                     ("expr: shipping_fee}", "expr: shipping_costs}"),
                     ("    table: payments\n", "    table: payment_log\n"),
                     ("    filter: is_active\n", "    filter: is_enabled\n")):
        assert old in text, old
        text = text.replace(old, new, 1)
    (folder / "demo.yaml").write_text(text)
    config = tmp_path / "nl2sql-gateway.toml"
    config.write_text(f'[databases.demo]\ndsn = "{demo_dsn}"\n')
    result = CliRunner().invoke(app, ["semantic", "check", "--database", "demo", "--semantic-dir", str(folder),
                                      "--config", str(config)])
    assert result.exit_code == 1, result.output
    lines = [line.split(str(folder / "demo.yaml") + ":", 1)[-1] for line in result.stdout.splitlines()]
    numbered = text.splitlines()
    found = {message: numbered[int(n) - 1].strip() for n, message in (line.split(": ", 1) for line in lines)}
    assert found == {
        "dimension channel: column orders.sales_channel does not exist": "channel:",
        "measure orders.shipping_total: column orders.shipping_costs does not exist":
            "shipping_total: {agg: sum, expr: shipping_costs}",
        "entity payments: table 'payment_log' does not exist": "table: payment_log",
        "metric active_customers: filter column customers.is_enabled does not exist": "filter: is_enabled",
    }
    clean = CliRunner().invoke(app, ["semantic", "check", "--database", "demo", "--semantic-dir",
                                     str(DEMO.parent), "--config", str(config)])
    assert clean.exit_code == 0, clean.output


def test_a_fresh_process_with_broken_files_starts_from_the_saved_model(tmp_path: Path) -> None:
    folder, state = tmp_path / "semantic", tmp_path / "state"
    folder.mkdir()
    path = folder / "shop.yaml"
    path.write_text(SMALL)
    first = SemanticRegistry(folder, state_dir=state)
    try:
        assert set(first.get("shop").metrics) == {"order_count"}
    finally:
        first.close()
    assert (state / "shop.json").is_file() and (state / "shop.json").stat().st_mode & 0o077 == 0
    path.write_text("metrics: [")  # broken while no process runs
    second = SemanticRegistry(folder, state_dir=state)
    try:
        assert set(second.get("shop").metrics) == {"order_count"}
        assert second.status("shop").state == "last_good"
    finally:
        second.close()
    (state / "shop.json").write_text("{not json")  # an unusable record is no model, never a half one
    third = SemanticRegistry(folder, state_dir=state)
    try:
        with pytest.raises(errors.SemanticUnavailable):
            third.get("shop")
    finally:
        third.close()
