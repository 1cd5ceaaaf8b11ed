"""A newcomer's first run: `serve --dsn` with no config file, and what a bare `serve` says."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from gateway.quickstart import parse_dsn_option
from gateway.settings import ConfigError
from tests.serving import free_port, start_serve

# The test session turns access control off for its subprocesses; a newcomer's shell has no such variable.
NEWCOMER_UNSET = tuple(k for k in os.environ if k.startswith("NL2SQL_")) + ("OPENAI_API_KEY", "OPENAI_BASE_URL")


def _cli(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in NEWCOMER_UNSET} | (env or {})
    return subprocess.run([sys.executable, "-m", "gateway", *args], cwd=cwd, env=environ, capture_output=True,
                          text=True, timeout=60)


def test_serve_dsn_answers_sql_from_a_directory_without_config(demo_dsn: str, tmp_path: Path) -> None:
    assert not list(tmp_path.iterdir())  # no config file, no rules, nothing
    proc, base = start_serve({}, tmp_path, args=("--dsn", f"shop={demo_dsn}"), unset=NEWCOMER_UNSET)
    try:
        answer = httpx.post(base + "/v1/sql", json={"database": "shop", "sql": "SELECT count(*) AS n FROM regions"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["rows"][0][0] > 0
        listed = httpx.get(base + "/v1/databases").json()
        assert [d["name"] for d in listed["databases"]] == ["shop"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def test_serve_dsn_names_the_database_after_the_dsn_and_stays_on_loopback(demo_dsn: str, tmp_path: Path) -> None:
    name, _ = parse_dsn_option(demo_dsn)
    assert name == "nl2sql_test_demo"
    # without access control the server refuses to listen beyond loopback, before binding anything
    result = _cli(["serve", "--dsn", demo_dsn, "--host", "0.0.0.0", "--port", str(free_port())], tmp_path)
    assert result.returncode == 2
    assert "loopback" in result.stderr and "Traceback" not in result.stderr


def test_dsn_option_parsing() -> None:
    name, db = parse_dsn_option("sales=postgresql://reader:s3cr%40t@db.internal:5432/sales_prod?sslmode=require")
    assert name == "sales"
    assert db.dsn == "postgresql://reader@db.internal:5432/sales_prod?sslmode=require"
    assert db.password is not None and db.password.get_secret_value() == "s3cr@t"
    # '=' inside the query string is no NAME= prefix
    assert parse_dsn_option("postgresql://reader@/shop?host=/tmp/pg")[0] == "shop"
    assert parse_dsn_option("postgresql://x@y/")[0] == "db"
    for bad in ["mysql://x@y/z", "sales=", "bad name=postgresql://x@y/z"]:
        with pytest.raises(ConfigError):
            parse_dsn_option(bad)


def test_bare_serve_without_config_says_how_to_start(tmp_path: Path) -> None:
    result = _cli(["serve", "--port", str(free_port())], tmp_path)
    assert result.returncode == 2
    assert "no config file found" in result.stderr
    assert "serve --dsn" in result.stderr and "nl2sql-gateway init" in result.stderr
    assert "store.dsn" not in result.stderr and "Traceback" not in result.stderr


def test_config_file_without_databases_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "nl2sql-gateway.toml").write_text("[auth]\nenabled = false\n")
    result = _cli(["serve", "--port", str(free_port())], tmp_path)
    assert result.returncode == 2
    assert "nl2sql-gateway.toml configures no database" in result.stderr


def test_busy_port_is_reported_before_serving(demo_dsn: str, tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = _cli(["serve", "--dsn", demo_dsn, "--port", str(port)], tmp_path)
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "gateway_started" not in result.stderr and "Traceback" not in result.stderr


def test_quickstart_doctests() -> None:
    import doctest

    import gateway.quickstart

    assert doctest.testmod(gateway.quickstart).failed == 0


def _no_settings_names(stderr: str) -> None:
    assert "databases." not in stderr and "NL2SQL_DATABASES" not in stderr, stderr
    assert "gateway_started" not in stderr and "Traceback" not in stderr, stderr


@pytest.mark.parametrize("wrong", ["database", "role", "port"])
def test_serve_dsn_on_a_wrong_database_role_or_port_fails_at_start_naming_the_dsn(
        wrong: str, demo_dsn: str, tmp_path: Path) -> None:
    from gateway.demo.generator import derive_dsn

    dsn = {"database": derive_dsn(demo_dsn, database="no_such_db"),
           "role": derive_dsn(demo_dsn, user="no_such_role"),
           "port": f"postgresql://reader@127.0.0.1:{free_port()}/sales"}[wrong]
    result = _cli(["serve", "--dsn", f"shop={dsn}", "--port", str(free_port())], tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"--dsn shop={dsn}" in result.stderr  # what the user wrote, quoted back
    said = {"database": ('database "no_such_db" does not exist', "check the database name in --dsn"),
            "role": ('role "no_such_role" does not exist', "check the user in --dsn"),
            "port": ("connection refused", "check the host and port in --dsn")}[wrong]
    assert all(s in result.stderr for s in said), result.stderr
    _no_settings_names(result.stderr)


def test_serve_dsn_beyond_loopback_gives_advice_that_works_with_dsn(demo_dsn: str, tmp_path: Path) -> None:
    # Turning access control on was the old advice; --dsn turns it off again, so it cannot be the answer.
    result = _cli(["serve", "--dsn", demo_dsn, "--host", "0.0.0.0", "--port", str(free_port())], tmp_path,
                  env={"NL2SQL_AUTH__ENABLED": "true"})
    assert result.returncode == 2
    assert "--dsn serves without access control" in result.stderr
    assert "NL2SQL_AUTH__ENABLED" not in result.stderr  # set above, and still refused: no advice to set it
    assert "nl2sql-gateway init" in result.stderr and "--host 127.0.0.1" in result.stderr


def test_serve_dsn_with_a_password_warns_that_it_is_visible(demo_dsn: str, tmp_path: Path) -> None:
    from gateway.demo.generator import derive_dsn

    reader = urlsplit(demo_dsn).username or ""
    secret = os.environ.get("NL2SQL_TEST_READER_PASSWORD") or "anything-trust-accepts"
    with_password = derive_dsn(demo_dsn, user=reader, password=secret)
    proc, base = start_serve({}, tmp_path, args=("--dsn", f"shop={with_password}"), unset=NEWCOMER_UNSET)
    try:
        assert httpx.post(base + "/v1/sql", json={"database": "shop", "sql": "SELECT 1 AS one"}).status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    assert "the password in --dsn is visible to other users of this machine" in stderr
    assert "PGPASSWORD" in stderr and "~/.pgpass" in stderr
    assert secret not in stderr  # the warning never repeats it
