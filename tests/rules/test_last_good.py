"""Rules fail closed at every start: the last good set is saved, and a fresh registry whose files are broken
(empty, a directory, a link to nothing, gone, the whole folder gone) serves it, all of it, or nothing."""

from __future__ import annotations

import json
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from gateway import errors
from gateway.rules import RulesRegistry
from gateway.rules.last_good import default_state_dir, record_path

RULES = """\
tables:
  orders: {description: One row per order.}
  employees:
    columns:
      salary: {hidden: true}
instructions:
  - Exclude cancelled orders from revenue.
limits: {max_rows: 7, max_joins: 2}
required_conditions:
  - name: exclude_cancelled
    applies_to: orders
    sql: "status <> 'cancelled'"
result_checks:
  - {name: no_negative, column: total, min: 0}
"""


def empty(path: Path) -> None:
    path.write_text("")


def directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


def dangling(path: Path) -> None:
    path.unlink()
    path.symlink_to(path.parent / "gone-elsewhere.yaml")


def missing(path: Path) -> None:
    path.unlink()


def folder_missing(path: Path) -> None:
    shutil.rmtree(path.parent)


BROKEN: dict[str, Callable[[Path], None]] = {"empty": empty, "directory": directory, "dangling": dangling,
                                             "missing": missing, "folder_missing": folder_missing}


def registry(rules: Path, **kw: object) -> RulesRegistry:
    return RulesRegistry(rules, state_dir=default_state_dir(rules), **kw)  # type: ignore[arg-type]


def assert_whole(rules: object) -> None:
    assert rules.hidden_columns == {"employees.salary"}  # type: ignore[attr-defined]
    assert rules.instructions == ["Exclude cancelled orders from revenue."]  # type: ignore[attr-defined]
    assert (rules.limits.max_rows, rules.limits.max_joins) == (7, 2)  # type: ignore[attr-defined]
    assert [c.name for c in rules.required_conditions] == ["exclude_cancelled"]  # type: ignore[attr-defined]
    assert [c.name for c in rules.result_checks] == ["no_negative"]  # type: ignore[attr-defined]
    assert rules.table_descriptions == {"orders": "One row per order."}  # type: ignore[attr-defined]


@pytest.fixture
def rules_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "demo.yaml").write_text(RULES)
    return folder


@pytest.mark.parametrize("form", sorted(BROKEN))
def test_a_fresh_process_starts_from_the_saved_set(rules_dir: Path, form: str) -> None:
    assert_whole(registry(rules_dir).get("demo"))  # a good start saves the set
    saved = record_path(default_state_dir(rules_dir), "demo")
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600  # it names hidden columns
    BROKEN[form](rules_dir / "demo.yaml")
    with capture_logs() as logs:
        fresh = registry(rules_dir)
        assert_whole(fresh.get("demo"))
    status = fresh.status("demo")
    assert status.state == "last_good" and "last good" in status.detail
    (failed,) = [e for e in logs if e["event"] == "rules_reload_failed"]
    assert failed["log_level"] == "error" and failed["serving"] == "last_good_saved"
    # the live process that started good keeps it too, instructions and limits included
    assert_whole(registry(rules_dir).get("demo"))


@pytest.mark.parametrize("form", sorted(BROKEN))
def test_a_live_process_keeps_the_whole_set(rules_dir: Path, form: str) -> None:
    live = RulesRegistry(rules_dir)  # nothing saved: memory alone
    assert_whole(live.get("demo"))
    BROKEN[form](rules_dir / "demo.yaml")
    assert_whole(live.get("demo"))
    assert live.status("demo").state == "last_good"


@pytest.mark.parametrize("form", ["empty", "directory", "dangling"])
def test_broken_from_the_first_start_with_nothing_saved_is_not_served(rules_dir: Path, form: str) -> None:
    BROKEN[form](rules_dir / "demo.yaml")
    fresh = registry(rules_dir)
    with pytest.raises(errors.RulesUnavailable):
        fresh.get("demo")
    assert fresh.status("demo").state == "unavailable"
    assert not record_path(default_state_dir(rules_dir), "demo").exists()
    # fixed: served again, without a restart
    path = rules_dir / "demo.yaml"
    if path.is_dir():
        path.rmdir()
    path.unlink(missing_ok=True)
    path.write_text(RULES)
    assert_whole(fresh.get("demo"))
    assert fresh.status("demo").state == "ok"


def test_a_database_that_requires_rules_is_not_served_without_them(tmp_path: Path) -> None:
    fresh = registry(tmp_path / "rules", modes={"demo": "required"})  # no folder, nothing saved
    with pytest.raises(errors.RulesUnavailable):
        fresh.get("demo")
    assert fresh.status("demo").reason == "folder_missing"
    (tmp_path / "rules").mkdir()
    assert fresh.status("demo").reason == "required"
    # without the setting, a database that never had rules has none (serve --dsn, no rules folder)
    assert registry(tmp_path / "rules").get("demo").hidden_columns == frozenset()


def test_rules_none_drops_a_vanished_file_and_forgets_the_saved_set(rules_dir: Path) -> None:
    registry(rules_dir).get("demo")
    (rules_dir / "demo.yaml").unlink()
    assert_whole(registry(rules_dir).get("demo"))  # auto: gone is not "no rules"
    declared = registry(rules_dir, modes={"demo": "none"})
    assert declared.get("demo").hidden_columns == frozenset()
    assert not record_path(default_state_dir(rules_dir), "demo").exists()
    assert registry(rules_dir).get("demo").instructions == []  # and later starts agree


def test_a_file_of_a_folder_that_held_rules_and_is_gone_keeps_the_set(tmp_path: Path) -> None:
    folder = tmp_path / "rules" / "demo"
    folder.mkdir(parents=True)
    (folder / "a.yaml").write_text("instructions: [Keep me.]\nlimits: {max_rows: 3}\n")
    (folder / "b.yaml").write_text("tables:\n  employees:\n    columns:\n      salary: {hidden: true}\n")
    live = registry(tmp_path / "rules")
    assert live.get("demo").instructions == ["Keep me."]
    (folder / "a.yaml").unlink()
    kept = live.get("demo")
    assert kept.instructions == ["Keep me."] and kept.limits.max_rows == 3
    assert registry(tmp_path / "rules").get("demo").instructions == ["Keep me."]  # a fresh one too
    # removing a file on purpose: make it say nothing (`{}`), let it load, then delete it
    (folder / "a.yaml").write_text("{}\n")
    assert live.get("demo").instructions == []
    (folder / "a.yaml").unlink()
    assert live.get("demo").instructions == [] and live.status("demo").state == "ok"
    fresh = registry(tmp_path / "rules")
    assert fresh.get("demo").hidden_columns == {"employees.salary"} and fresh.status("demo").state == "ok"


def test_a_fresh_start_keeps_saved_hidden_names_the_file_merely_lost(rules_dir: Path) -> None:
    registry(rules_dir).get("demo")
    (rules_dir / "demo.yaml").write_text(RULES.replace("      salary: {hidden: true}\n", ""))
    assert registry(rules_dir).get("demo").hidden_columns == {"employees.salary"}
    (rules_dir / "demo.yaml").write_text(RULES.replace("salary: {hidden: true}", "salary: {hidden: false}"))
    assert registry(rules_dir).get("demo").hidden_columns == frozenset()
    (rules_dir / "demo.yaml").write_text(RULES.replace("      salary: {hidden: true}\n", ""))
    assert registry(rules_dir).get("demo").hidden_columns == frozenset()  # un-hidden on purpose, saved so


@pytest.mark.parametrize("garbage", [b"{not json", b'{"format": 99}', b"[]", b'{"format": 1, "database": "demo"}'])
def test_an_unusable_saved_record_serves_nothing_when_the_files_are_broken(rules_dir: Path,
                                                                          garbage: bytes) -> None:
    registry(rules_dir).get("demo")
    record_path(default_state_dir(rules_dir), "demo").write_bytes(garbage)
    (rules_dir / "demo.yaml").unlink()
    fresh = registry(rules_dir)
    with pytest.raises(errors.RulesUnavailable):
        fresh.get("demo")
    assert fresh.status("demo").reason == "state_unreadable"
    (rules_dir / "demo.yaml").write_text(RULES)
    assert_whole(fresh.get("demo"))  # a good load writes a usable record again
    assert json.loads(record_path(default_state_dir(rules_dir), "demo").read_text())["format"] == 1


def test_an_unwritable_state_folder_is_logged_and_counted(rules_dir: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    with capture_logs() as logs:
        assert_whole(RulesRegistry(rules_dir, state_dir=blocker / "state").get("demo"))
    assert any(e["event"] == "rules_last_good_not_saved" and e["log_level"] == "error" for e in logs)


FILTERED = "tables:\n  orders:\n    row_filter: \"customer_id = {claim.customer}\"\n"


def test_row_filters_are_saved_and_stay_until_a_file_lifts_them(tmp_path: Path) -> None:
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "demo.yaml").write_text(FILTERED)
    live = registry(folder)
    assert set(live.get("demo").row_filters) == {"orders"}
    # A broken file at a fresh start: the saved set, filter included.
    empty(folder / "demo.yaml")
    assert set(registry(folder).get("demo").row_filters) == {"orders"}
    # A file that parses but lost the filter (half-written, or the line deleted): still filtered, in the live
    # process and in a fresh one.
    (folder / "demo.yaml").write_text("tables:\n  orders:\n    description: Orders.\n")
    assert set(live.get("demo").row_filters) == {"orders"}
    assert set(registry(folder).get("demo").row_filters) == {"orders"}
    # `row_filter: false` lifts it, and that is saved too.
    (folder / "demo.yaml").write_text("tables:\n  orders:\n    row_filter: false\n")
    assert live.get("demo").row_filters == {}
    (folder / "demo.yaml").write_text("tables:\n  orders:\n    description: Orders.\n")
    assert registry(folder).get("demo").row_filters == {}


def test_an_empty_row_filter_is_a_rule_error(tmp_path: Path) -> None:
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "demo.yaml").write_text("tables:\n  orders:\n    row_filter: '  '\n")
    fresh = registry(folder)
    assert fresh.status("demo").state == "unavailable"
    assert any("row_filter" in p.message for p in fresh.problems("demo"))
