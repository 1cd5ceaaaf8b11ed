"""Shipped rules and guidelines resolve from the package, never from the working directory."""

from __future__ import annotations

import os
import shutil
import tomllib
from pathlib import Path

import pytest

from gateway.config import assets
from gateway.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def test_in_a_checkout_the_editable_top_level_folders_are_used() -> None:
    assert assets.shipped_dir("rules") == ROOT / "rules"
    assert assets.shipped_dir("guidelines") == ROOT / "guidelines"


def test_the_wheel_ships_them_where_the_lookup_searches() -> None:
    data_files = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    for asset, marker in assets.MARKERS.items():
        target = str(assets.SHARE / asset)
        assert target in data_files, f"{asset} is not in the wheel's data files"
        shipped = {p for pattern in data_files[target] for p in ROOT.glob(pattern)}
        assert ROOT / asset / marker in shipped


def test_an_installed_copy_is_found_when_there_is_no_checkout(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = tmp_path / "venv"
    for asset, marker in assets.MARKERS.items():
        folder = prefix / assets.SHARE / asset
        folder.mkdir(parents=True)
        shutil.copy(ROOT / asset / marker, folder / marker)
    monkeypatch.setattr(assets, "__file__", str(tmp_path / "site-packages" / "gateway" / "config" / "assets.py"))
    monkeypatch.setattr(assets.sysconfig, "get_path", lambda name: str(prefix))
    assert assets.shipped_dir("rules") == prefix / assets.SHARE / "rules"
    assert assets.shipped_dir("guidelines") == prefix / assets.SHARE / "guidelines"


def test_guidelines_default_does_not_depend_on_the_working_directory(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NL2SQL_CONFIG", raising=False)
    monkeypatch.delenv("NL2SQL_GUIDELINES_DIR", raising=False)
    assert os.getcwd() == str(tmp_path)
    assert (Settings().guidelines_dir / "default.md").is_file()
