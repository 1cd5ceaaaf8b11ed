"""The rules directory's watch: a change is seen by the next call, no change costs no stat."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gateway.rules import RulesRegistry
from gateway.rules import registry as registry_module
from gateway.rules import watch as watch_module
from gateway.rules.watch import Watch

RULES = "tables:\n  employees:\n    columns:\n      salary: {hidden: true}\n"
MORE = "tables:\n  employees:\n    columns:\n      salary: {hidden: true}\n      email: {hidden: true}\n"

needs_inotify = pytest.mark.skipif(watch_module._inotify() is None, reason="no inotify on this system")


@needs_inotify
def test_every_kind_of_change_moves_the_generation(tmp_path: Path) -> None:
    watch = Watch(tmp_path)
    assert watch.watching
    seen = watch.generation()
    assert watch.generation() == seen  # nothing happened

    def moved() -> bool:
        nonlocal seen
        now = watch.generation()
        changed, seen = now != seen, now
        return changed

    (tmp_path / "demo.yaml").write_text(RULES)
    assert moved()
    with (tmp_path / "demo.yaml").open("a") as f:  # written in place, same inode
        f.write("# more\n")
    assert moved()
    (tmp_path / "demo").mkdir()
    assert moved()
    assert not moved()
    (tmp_path / "demo" / "extra.yaml").write_text(RULES)  # inside a folder that appeared after the start
    assert moved()
    (tmp_path / "demo" / "extra.yaml").write_text(MORE)
    assert moved()
    (tmp_path / "tmp.yaml").write_text(MORE)
    os.replace(tmp_path / "tmp.yaml", tmp_path / "demo.yaml")  # an atomic replace, as editors do
    assert moved()
    (tmp_path / "demo" / "extra.yaml").unlink()
    assert moved()
    assert not moved()


@needs_inotify
def test_a_symlinked_rule_file_edited_in_place_is_seen(tmp_path: Path) -> None:
    rules, elsewhere = tmp_path / "rules", tmp_path / "config"
    rules.mkdir()
    elsewhere.mkdir()
    (elsewhere / "demo.yaml").write_text(RULES)
    (rules / "demo.yaml").symlink_to(elsewhere / "demo.yaml")
    registry = RulesRegistry(rules)
    assert registry.get("demo").hidden_columns == {"employees.salary"}
    (elsewhere / "demo.yaml").write_text(MORE)  # the link's target changes; the rules directory does not
    assert registry.get("demo").hidden_columns == {"employees.salary", "employees.email"}


@needs_inotify
def test_the_registry_stats_the_files_only_after_a_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "demo.yaml").write_text(RULES)
    registry = RulesRegistry(tmp_path)
    calls = []
    real = registry_module.rule_files
    monkeypatch.setattr(registry_module, "rule_files", lambda *a: calls.append(a) or real(*a))
    assert registry.get("demo").hidden_columns == {"employees.salary"}
    for _ in range(5):
        registry.get("demo")
    assert len(calls) == 1
    (tmp_path / "demo.yaml").write_text(MORE)
    assert registry.get("demo").hidden_columns == {"employees.salary", "employees.email"}  # at once
    assert len(calls) == 2
    assert registry.get("other").sources == ()  # another database is checked on its own
    assert registry.get("other") is registry.get("other")  # one empty rule set: policy_for's memo holds


def test_without_inotify_the_directory_is_polled_once_a_second(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch_module, "_inotify", lambda: None)
    clock = [1000.0]
    monkeypatch.setattr(watch_module.time, "monotonic", lambda: clock[0])
    registry = RulesRegistry(tmp_path)
    assert not registry._watch.watching
    assert registry.get("demo").hidden_columns == frozenset()
    (tmp_path / "demo.yaml").write_text(RULES)
    clock[0] += watch_module.POLL_S / 2
    assert registry.get("demo").hidden_columns == frozenset()  # within the second: not looked at yet
    clock[0] += watch_module.POLL_S / 2
    assert registry.get("demo").hidden_columns == {"employees.salary"}


@needs_inotify
def test_a_missing_directory_is_polled_until_it_appears_then_watched(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(watch_module.time, "monotonic", lambda: clock[0])
    folder = tmp_path / "rules"
    registry = RulesRegistry(folder)
    assert not registry._watch.watching
    assert registry.get("demo").hidden_columns == frozenset()
    folder.mkdir()
    (folder / "demo.yaml").write_text(RULES)
    clock[0] += watch_module.POLL_S
    assert registry.get("demo").hidden_columns == {"employees.salary"}
    assert registry._watch.watching
    (folder / "demo.yaml").write_text(MORE)  # from now on seen at once, the clock standing still
    assert registry.get("demo").hidden_columns == {"employees.salary", "employees.email"}
