"""Version 0 is the shipped guideline file: listed, shown, and a rollback target."""

from __future__ import annotations

from pathlib import Path

from gateway.settings import StoreSettings
from gateway.store import Store, guidelines
from tests.magic.helpers import guideline_text
from tests.magic.test_cli import cli

ROOT = Path(__file__).resolve().parents[2]


async def test_the_shipped_guideline_is_version_0_and_rollback_returns_to_it(fresh_db: str, tmp_path: Path) -> None:
    shipped = (ROOT / "guidelines" / "default.md").read_text()
    first_line = shipped.strip().splitlines()[0]
    assert cli(["migrate"], fresh_db, tmp_path).returncode == 0
    # an empty store: the shipped file is in force, and says so (run outside the checkout)
    listed = cli(["guideline", "list"], fresh_db, tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0].split()[:2] == ["v0", "active"]
    assert "default.md" in listed.stdout
    shown = cli(["guideline", "show"], fresh_db, tmp_path)
    assert shown.returncode == 0 and "# Guideline v0 (active)" in shown.stdout and first_line in shown.stdout

    store = await Store.open(StoreSettings(dsn=fresh_db))
    try:
        async with store.transaction() as conn:
            v1 = await guidelines.add_candidate(conn, text=guideline_text(1), parent=None, provenance={})
        await guidelines.activate(store.pool, v1)
        listed = cli(["guideline", "list"], fresh_db, tmp_path)
        assert listed.stdout.splitlines()[0].split()[:2] == ["v0", "retired"]
        assert "# Guideline v0 (retired)" in cli(["guideline", "show", "0"], fresh_db, tmp_path).stdout
        # v1 was the first stored version: the one before it is the shipped file
        rolled = cli(["guideline", "rollback"], fresh_db, tmp_path)
        assert rolled.returncode == 0 and "v0 (the shipped guideline file) is active" in rolled.stdout
        assert await guidelines.active(store.pool) is None
        assert "# Guideline v0 (active)" in cli(["guideline", "show"], fresh_db, tmp_path).stdout
        # and forward again, then explicitly back to 0
        assert "v1 is active" in cli(["guideline", "rollback", "1"], fresh_db, tmp_path).stdout
        assert (await guidelines.active(store.pool)).version == v1  # type: ignore[union-attr]
        assert "v0" in cli(["guideline", "rollback", "0"], fresh_db, tmp_path).stdout
        assert await guidelines.active(store.pool) is None
    finally:
        await store.close()
