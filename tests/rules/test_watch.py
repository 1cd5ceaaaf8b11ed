"""The rules directory's watch: a change is seen by the next call, no change costs no stat."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from gateway.rules import RulesRegistry
from gateway.rules import registry as registry_module
from gateway.rules import watch as watch_module
from gateway.rules.watch import Watch

RULES = "tables:\n  employees:\n    columns:\n      salary: {hidden: true}\n"
MORE = "tables:\n  employees:\n    columns:\n      salary: {hidden: true}\n      email: {hidden: true}\n"

needs_inotify = pytest.mark.skipif(watch_module._inotify() is None, reason="no inotify on this system")


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The watch's clock, standing still unless a test moves it: what inotify sees is seen without the tick."""
    now = [1000.0]
    monkeypatch.setattr(watch_module.time, "monotonic", lambda: now[0])
    return now


@needs_inotify
def test_every_kind_of_change_moves_the_generation(tmp_path: Path, clock: list[float]) -> None:
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
def test_a_symlinked_rule_file_edited_in_place_is_seen(tmp_path: Path, clock: list[float]) -> None:
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
def test_the_registry_stats_the_files_only_after_a_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         clock: list[float]) -> None:
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
    clock[0] += watch_module.POLL_S  # the safety net: once a second the files are statted whatever happened
    registry.get("demo")
    assert len(calls) == 4


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
def test_a_missing_directory_is_watched_from_its_parent_until_it_appears(tmp_path: Path,
                                                                         clock: list[float]) -> None:
    folder = tmp_path / "rules"
    registry = RulesRegistry(folder)
    assert not registry._watch.watching
    assert registry.get("demo").hidden_columns == frozenset()
    folder.mkdir()
    (folder / "demo.yaml").write_text(RULES)
    assert registry.get("demo").hidden_columns == {"employees.salary"}  # the parent's event, not the tick
    assert registry._watch.watching
    (folder / "demo.yaml").write_text(MORE)  # from now on seen at once, the clock standing still
    assert registry.get("demo").hidden_columns == {"employees.salary", "employees.email"}


OPEN = "tables:\n  employees:\n    columns:\n      email: {hidden: true}\n"
HIDE = OPEN + "      salary: {hidden: true}\n"
MOST = HIDE + "      phone: {hidden: true}\n"

# Deployments change rule files in ways no single folder's events show. Each case below left a hidden column
# visible until a restart while only the rules folder and the final folders of links were watched.


@needs_inotify
def test_the_rules_directory_swapped_for_another_then_edited(tmp_path: Path, clock: list[float]) -> None:
    rules, new = tmp_path / "rules", tmp_path / "rules.new"
    rules.mkdir()
    (rules / "demo.yaml").write_text(OPEN)
    registry = RulesRegistry(rules)
    assert registry.get("demo").hidden_columns == {"employees.email"}
    new.mkdir()
    (new / "demo.yaml").write_text(OPEN)
    os.rename(rules, tmp_path / "rules.old")
    os.rename(new, rules)
    assert registry.get("demo").hidden_columns == {"employees.email"}
    (rules / "demo.yaml").write_text(HIDE)  # an edit in the directory that took the old one's place
    assert registry.get("demo").hidden_columns == {"employees.email", "employees.salary"}
    (tmp_path / "rules.old" / "demo.yaml").write_text("tables: {}\n")  # the old one no longer counts
    assert registry.get("demo").hidden_columns == {"employees.email", "employees.salary"}


@needs_inotify
def test_a_link_on_the_way_to_a_rule_file_switched(tmp_path: Path, clock: list[float]) -> None:
    """rules/demo.yaml -> current/demo.yaml, and a deploy switches current from releases/1 to releases/2."""
    one, two = tmp_path / "releases" / "1", tmp_path / "releases" / "2"
    one.mkdir(parents=True)
    two.mkdir(parents=True)
    (one / "demo.yaml").write_text(OPEN)
    (two / "demo.yaml").write_text(HIDE)
    (tmp_path / "current").symlink_to(one)
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "demo.yaml").symlink_to(tmp_path / "current" / "demo.yaml")
    registry = RulesRegistry(rules)
    assert registry.get("demo").hidden_columns == {"employees.email"}
    (tmp_path / "current.tmp").symlink_to(two)
    os.replace(tmp_path / "current.tmp", tmp_path / "current")  # the atomic switch deploy tools make
    assert registry.get("demo").hidden_columns == {"employees.email", "employees.salary"}
    (two / "demo.yaml").write_text(MOST)  # and the new release's folder is the one watched now
    assert len(registry.get("demo").hidden_columns) == 3


@needs_inotify
def test_the_rules_directory_behind_a_switched_link(tmp_path: Path, clock: list[float]) -> None:
    for release, text in (("1", OPEN), ("2", HIDE)):
        folder = tmp_path / "releases" / release / "rules"
        folder.mkdir(parents=True)
        (folder / "demo.yaml").write_text(text)
    (tmp_path / "current").symlink_to(tmp_path / "releases" / "1")
    registry = RulesRegistry(tmp_path / "current" / "rules")
    assert registry.get("demo").hidden_columns == {"employees.email"}
    (tmp_path / "current.tmp").symlink_to(tmp_path / "releases" / "2")
    os.replace(tmp_path / "current.tmp", tmp_path / "current")
    assert registry.get("demo").hidden_columns == {"employees.email", "employees.salary"}
    (tmp_path / "releases" / "2" / "rules" / "demo.yaml").write_text(MOST)
    assert len(registry.get("demo").hidden_columns) == 3


@needs_inotify
def test_a_link_added_to_a_database_folder_has_its_target_watched(tmp_path: Path, clock: list[float]) -> None:
    rules, shared = tmp_path / "rules", tmp_path / "shared"
    (rules / "demo").mkdir(parents=True)
    shared.mkdir()
    (rules / "demo" / "base.yaml").write_text("tables: {}\n")
    registry = RulesRegistry(rules)
    assert registry.get("demo").hidden_columns == frozenset()
    (shared / "hr.yaml").write_text(OPEN)
    (rules / "demo" / "hr.yaml").symlink_to(shared / "hr.yaml")
    assert registry.get("demo").hidden_columns == {"employees.email"}
    (shared / "hr.yaml").write_text(HIDE)
    assert registry.get("demo").hidden_columns == {"employees.email", "employees.salary"}


def _publish(mount: Path, version: int, text: str, old: str | None) -> str:
    """What the kubelet does to a mounted ConfigMap: a new timestamped folder, ``..data`` switched to it."""
    folder = mount / f"..2026_{version}"
    folder.mkdir()
    (folder / "hr.yaml").write_text(text)
    (mount / "..data_tmp").symlink_to(folder.name)
    os.replace(mount / "..data_tmp", mount / "..data")
    if old:
        shutil.rmtree(mount / old)
    return folder.name


@needs_inotify
@pytest.mark.parametrize("as_database_folder", [True, False])
def test_a_configmap_mount_updated_twice(tmp_path: Path, clock: list[float], as_database_folder: bool) -> None:
    rules = tmp_path / "rules"
    mount = rules / "demo" if as_database_folder else rules
    mount.mkdir(parents=True)
    old = _publish(mount, 0, OPEN, None)
    (mount / ("hr.yaml" if as_database_folder else "demo.yaml")).symlink_to("..data/hr.yaml")
    registry = RulesRegistry(rules)
    assert len(registry.get("demo").hidden_columns) == 1
    old = _publish(mount, 1, HIDE, old)
    assert len(registry.get("demo").hidden_columns) == 2
    _publish(mount, 2, MOST, old)
    assert len(registry.get("demo").hidden_columns) == 3


@needs_inotify
def test_a_change_no_event_reports_is_seen_within_a_second(tmp_path: Path, clock: list[float],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A network file system sends no events, and the kernel may refuse a watch (ENOSPC): the tick remains."""
    (tmp_path / "demo.yaml").write_text(OPEN)
    real_add = watch_module._Inotify.add

    def refuse(self: watch_module._Inotify, path: str, watch: Watch, mask: int) -> int:
        if os.path.samefile(path, tmp_path):
            raise OSError(errno.ENOSPC, "inotify_add_watch failed: no space left on device")
        return real_add(self, path, watch, mask)

    monkeypatch.setattr(watch_module._Inotify, "add", refuse)
    with capture_logs() as logs:
        registry = RulesRegistry(tmp_path)
        assert registry.get("demo").hidden_columns == {"employees.email"}
    assert not registry._watch.watching
    assert [entry["event"] for entry in logs if entry["log_level"] == "warning"] == ["rules_watch_refused"]
    (tmp_path / "demo.yaml").write_text(HIDE)
    assert registry.get("demo").hidden_columns == {"employees.email"}  # nothing told the watch yet
    clock[0] += watch_module.POLL_S
    assert registry.get("demo").hidden_columns == {"employees.email", "employees.salary"}


@needs_inotify
def test_a_watch_started_without_inotify_takes_it_up_once_it_is_available(tmp_path: Path, clock: list[float],
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """inotify_init1 can fail for a while (fs.inotify.max_user_instances): the tick asks again."""
    (tmp_path / "demo.yaml").write_text(OPEN)
    real = watch_module._inotify
    monkeypatch.setattr(watch_module, "_inotify", lambda: None)
    registry = RulesRegistry(tmp_path)
    assert not registry._watch.watching
    monkeypatch.setattr(watch_module, "_inotify", real)
    clock[0] += watch_module.POLL_S
    assert registry.get("demo").hidden_columns == {"employees.email"}
    assert registry._watch.watching
    (tmp_path / "demo.yaml").write_text(HIDE)  # seen at once from now on, the clock standing still
    assert registry.get("demo").hidden_columns == {"employees.email", "employees.salary"}
