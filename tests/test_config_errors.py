"""Configuration errors a person can act on: file or variable, key path, what was expected, did-you-mean."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from gateway.config.errors import known_keys
from gateway.settings import ConfigError, DatabaseSettings, Settings, load_settings
from tests.serving import in_process

ENV = {k: v for k, v in os.environ.items() if not k.startswith("NL2SQL_")}


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway", *args], cwd=cwd, env={**ENV, **(env or {})},
                          capture_output=True, text=True, timeout=60)


def test_a_misspelt_key_in_the_file_names_file_key_and_the_likely_key(tmp_path: Path) -> None:
    (tmp_path / "nl2sql-gateway.toml").write_text(
        '[databases.sales]\ndns = "postgresql://reader@db/sales"\n\n[server]\nport = "eighty"\n'
        '[logging]\nlevel = "LOUD"\n')
    result = run(["schema", "sales"], tmp_path, {"NL2SQL_LLM__MODLE": "gpt"})
    assert result.returncode == 2
    err = result.stderr
    assert "nl2sql-gateway.toml: databases.sales.dns: unknown key; did you mean 'dsn'?" in err
    assert "databases.sales.dsn" not in err  # the near miss explains it; no second "dsn is missing" line
    assert "nl2sql-gateway.toml: server.port: Input should be a valid integer" in err and "'eighty'" in err
    assert "logging.level: Input should be 'DEBUG', 'INFO', 'WARNING' or 'ERROR' (got 'LOUD')" in err
    assert "environment variable NL2SQL_LLM__MODLE: llm.modle: unknown key; did you mean 'model'?" in err
    assert "pydantic" not in err and "http" not in err and "Traceback" not in err
    assert result.stdout == ""


def test_secrets_are_not_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NL2SQL_DATABASES__S__DSN", "mysql://u:hunter2@h/d")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert "environment variable NL2SQL_DATABASES__S__DSN: databases.s.dsn: dsn must be a postgresql:// URL" \
        in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_known_keys_walk_through_named_tables() -> None:
    assert "max_rows" in known_keys(Settings, ["databases", "sales", "limits"])
    assert "burst" in known_keys(Settings, ["backpressure", "roles", "client"])
    assert known_keys(Settings, ["nope"]) == []


async def test_readiness_and_start_up_warnings_explain_in_words(pg, demo_dsn: str) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(databases={
        "demo": DatabaseSettings(dsn=demo_dsn),
        "gone": DatabaseSettings(dsn=pg.dsn("no_such_database_here")),
        "stranger": DatabaseSettings(dsn=pg.dsn("postgres", user="no_such_role_here")),
    })
    with capture_logs() as logs:
        async with in_process(settings) as (http, _):
            ready = await http.get("/readyz")
    warnings = {entry["database"]: entry["error"] for entry in logs if entry["event"] == "pool_prewarm_failed"}
    assert set(warnings) == {"gone", "stranger"}
    assert "check the database name in databases.gone.dsn" in warnings["gone"]
    assert ready.status_code == 503
    reasons = ready.json()["databases"]
    assert reasons["demo"] == "ok"
    assert "no_such_database_here" in reasons["gone"] and "databases.gone.dsn" in reasons["gone"]
    assert "refused the login" in reasons["stranger"] and "NL2SQL_DATABASES__STRANGER__PASSWORD" in reasons["stranger"]
    assert "Error" not in reasons["gone"] + reasons["stranger"]  # no exception class names


async def test_zero_databases_is_not_ready() -> None:
    async with in_process(Settings()) as (http, _):
        ready = await http.get("/readyz")
    assert ready.status_code == 503 and "no database is configured" in ready.json()["detail"]
