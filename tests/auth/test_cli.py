"""``nl2sql-gateway keys create|list|revoke`` as real processes, against a store a running gateway uses."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.auth.conftest import Gateway, bearer

SQL = {"database": "demo", "sql": "SELECT 1"}


async def keys(store_dsn: str, demo_dsn: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NL2SQL_STORE__DSN": store_dsn, "NL2SQL_DATABASES__DEMO__DSN": demo_dsn,
           "NL2SQL_DATABASES__RLS__DSN": demo_dsn}
    env.pop("NL2SQL_CONFIG", None)
    # In a thread: the gateway under test shares this event loop.
    return await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "gateway", "keys", *args], env=env,
                                   cwd=cwd, capture_output=True, text=True, timeout=60)


async def test_create_prints_a_working_token_once_list_shows_no_secret_and_revoke_locks_it_out(
    gw: Gateway, store_dsn: str, demo_dsn: str, tmp_path: Path,
) -> None:
    created = await keys(store_dsn, demo_dsn, tmp_path, "create", "--name", "cli-bi", "--role", "client",
                         "--databases", "demo", "--pg-role", "some_role")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert token.startswith("nl2sql_") and "\n" not in token  # stdout carries the token alone
    assert "shown only now" in created.stderr
    key_id, secret = token.split("_")[1], token.split("_")[2]

    listed = await keys(store_dsn, demo_dsn, tmp_path, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    entry = next(k for k in json.loads(listed.stdout) if k["id"] == key_id)
    assert entry == {**entry, "name": "cli-bi", "role": "client", "databases": ["demo"], "pg_role": "some_role",
                     "revoked_at": None}
    assert secret not in listed.stdout
    table = await keys(store_dsn, demo_dsn, tmp_path, "list")
    assert key_id in table.stdout and "active" in table.stdout and secret not in table.stdout

    # The running gateway accepts the key (its Postgres role does not exist: the query itself fails).
    plain = await keys(store_dsn, demo_dsn, tmp_path, "create", "--name", "cli-plain", "--role", "client",
                       "--databases", "demo")
    plain_token = plain.stdout.strip()
    assert (await gw.http.post("/v1/sql", json=SQL, headers=bearer(plain_token))).status_code == 200
    assert (await gw.http.get("/v1/databases", headers=bearer(token))).status_code == 200

    revoked = await keys(store_dsn, demo_dsn, tmp_path, "revoke", plain_token.split("_")[1])
    assert revoked.returncode == 0, revoked.stderr
    response = await gw.http.post("/v1/sql", json=SQL, headers=bearer(plain_token))
    assert response.status_code == 401 and response.json()["code"] == "unauthorized"
    again = await keys(store_dsn, demo_dsn, tmp_path, "revoke", plain_token.split("_")[1])
    assert again.returncode == 1 and "no active key" in again.stderr

    active = json.loads((await keys(store_dsn, demo_dsn, tmp_path, "list", "--json", "--active")).stdout)
    assert key_id in {k["id"] for k in active} and plain_token.split("_")[1] not in {k["id"] for k in active}


async def test_create_refuses_unknown_databases_duplicate_names_and_bad_roles(
    gw: Gateway, store_dsn: str, demo_dsn: str, tmp_path: Path,
) -> None:
    unknown = await keys(store_dsn, demo_dsn, tmp_path, "create", "--name", "x", "--role", "client",
                         "--databases", "demo,warehouse")
    assert unknown.returncode == 2 and "warehouse" in unknown.stderr and not unknown.stdout.strip()
    bad_role = await keys(store_dsn, demo_dsn, tmp_path, "create", "--name", "x", "--role", "root",
                          "--databases", "demo")
    assert bad_role.returncode == 2 and not bad_role.stdout.strip()
    first = await keys(store_dsn, demo_dsn, tmp_path, "create", "--name", "twice", "--role", "dba",
                       "--databases", "*")
    assert first.returncode == 0, first.stderr
    second = await keys(store_dsn, demo_dsn, tmp_path, "create", "--name", "twice", "--role", "dba",
                        "--databases", "*")
    assert second.returncode == 1 and "already named" in second.stderr and not second.stdout.strip()


async def test_keys_without_a_store_explain_what_to_set(tmp_path: Path, demo_dsn: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NL2SQL_STORE")}
    env.pop("NL2SQL_CONFIG", None)
    result = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "gateway", "keys", "list"], env=env,
                                     cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "store.dsn" in result.stderr
