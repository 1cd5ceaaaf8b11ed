"""Without API keys the gateway only listens on loopback; with them it needs a store to keep them in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.api.app import create_app
from gateway.auth import check_exposure, is_loopback
from gateway.settings import AuthSettings, ConfigError, DatabaseSettings, OidcSettings, ServerSettings, Settings


@pytest.mark.parametrize("host", ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_addresses(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "192.168.1.1", "gateway.internal", "",
                                  "localhost.evil.example", "::ffff:10.0.0.1"])
def test_addresses_beyond_loopback(host: str) -> None:
    assert not is_loopback(host)


def settings(host: str, enabled: bool, store_dsn: str | None = None) -> Settings:
    return Settings(databases={}, server=ServerSettings(host=host), auth=AuthSettings(enabled=enabled),
                    store={"dsn": store_dsn})  # type: ignore[arg-type]


def test_auth_is_on_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NL2SQL_AUTH__ENABLED", raising=False)
    assert Settings().auth.enabled is True


def test_no_auth_beyond_loopback_is_refused_and_names_the_settings() -> None:
    with pytest.raises(ConfigError, match=r"auth\.enabled.*0\.0\.0\.0"):
        check_exposure(settings("0.0.0.0", enabled=False))
    check_exposure(settings("127.0.0.1", enabled=False))
    check_exposure(settings("0.0.0.0", enabled=True, store_dsn="postgresql://gw@db/store"))


def test_auth_without_a_store_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"store\.dsn"):
        check_exposure(settings("127.0.0.1", enabled=True))


def test_end_user_tokens_alone_need_no_store() -> None:
    only_tokens = settings("0.0.0.0", enabled=True)
    only_tokens.auth.oidc = OidcSettings(issuer="https://idp.example", audience="nl2sql-gateway")
    check_exposure(only_tokens)  # keys cannot be used (no store), tokens can


async def test_the_app_refuses_to_start_beyond_loopback_without_auth(demo_dsn: str) -> None:
    app = create_app(Settings(databases={"demo": DatabaseSettings(dsn=demo_dsn)},
                              server=ServerSettings(host="0.0.0.0"), auth=AuthSettings(enabled=False)))
    with pytest.raises(ConfigError, match="loopback"):
        async with app.router.lifespan_context(app):
            pytest.fail("the app started")  # pragma: no cover


def run_serve(tmp_path: Path, demo_dsn: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "NL2SQL_DATABASES__DEMO__DSN": demo_dsn, **env}
    full.pop("NL2SQL_CONFIG", None)
    full.pop("NL2SQL_STORE__DSN", None)
    return subprocess.run([sys.executable, "-m", "gateway", "serve", "--port", "0", *args], env=full, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)


def test_serve_refuses_a_public_address_without_auth(tmp_path: Path, demo_dsn: str) -> None:
    result = run_serve(tmp_path, demo_dsn, "--host", "0.0.0.0", NL2SQL_AUTH__ENABLED="false")
    assert result.returncode == 2, result.stderr
    assert "auth.enabled is false" in result.stderr and "0.0.0.0" in result.stderr
    assert "Uvicorn running" not in result.stderr + result.stdout


def test_serve_refuses_auth_without_a_store(tmp_path: Path, demo_dsn: str) -> None:
    result = run_serve(tmp_path, demo_dsn, "--host", "127.0.0.1", NL2SQL_AUTH__ENABLED="true")
    assert result.returncode == 2, result.stderr
    assert "store.dsn" in result.stderr
