"""The whole /v1/sql and /v1/ask test modules once more, with PgBouncer (transaction mode) between the gateway
and the demo database: ``NL2SQL_TEST_PGBOUNCER=1`` makes the suite's ``demo_dsn`` go through the ``pgbouncer``
fixture. Run as a child pytest so that the suite itself stays one command (the README's), with its own
temporary folder (pytest's retention would otherwise prune this run's folders from under it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = ("tests/api/test_sql.py", "tests/ask")


@pytest.mark.skipif(not (shutil.which("pgbouncer") or Path("/usr/sbin/pgbouncer").exists()),
                    reason="Debian's pgbouncer is not installed (.ci/run installs it)")
def test_the_sql_and_ask_modules_pass_through_pgbouncer(tmp_path: Path) -> None:
    env = {**os.environ, "NL2SQL_TEST_PGBOUNCER": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--basetemp={tmp_path / 'run'}",
         *MODULES], cwd=ROOT, env=env, capture_output=True, text=True)
    tail = "\n".join(done.stdout.splitlines()[-30:])
    assert done.returncode == 0, tail
    assert " passed" in tail.splitlines()[-1], tail
