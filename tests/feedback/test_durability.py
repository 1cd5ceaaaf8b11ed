"""A 2xx from POST /v1/feedback means committed: the row survives the gateway being killed right after."""

from __future__ import annotations

import signal
from pathlib import Path

import asyncpg
import httpx

from gateway.settings import StoreSettings
from gateway.store import Store, audit
from tests.magic.helpers import case
from tests.serving import start_serve


async def test_feedback_that_returned_201_survives_sigkill(demo_dsn: str, fresh_db: str, tmp_path: Path) -> None:
    # The store's schema and the answer to give feedback on.
    store = await Store.open(StoreSettings(dsn=fresh_db))
    try:
        await audit.record(store.pool, audit.AuditEntry("req-kill", "demo", case(7).question, "ok",
                                                        final_sql=case(7).incorrect_sql, owner="analyst"))
    finally:
        await store.close()

    env = {"NL2SQL_DATABASES__DEMO__DSN": demo_dsn, "NL2SQL_STORE__DSN": fresh_db,
           "NL2SQL_AUTH__ENABLED": "false", "NL2SQL_MAGIC__SCHEDULE": "false"}
    proc, base = start_serve(env, tmp_path)
    try:
        answer = httpx.post(base + "/v1/feedback", headers={"X-Client-Id": "analyst"}, timeout=30, json={
            "request_id": "req-kill", "verdict": "incorrect", "corrected_sql": case(7).correct_sql})
        # No graceful anything: the process dies the moment the answer is in.
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert answer.status_code == 201, answer.text
    assert proc.returncode == -signal.SIGKILL

    conn = await asyncpg.connect(fresh_db)
    try:
        fb = await conn.fetchrow("SELECT * FROM feedback WHERE request_id = 'req-kill'")
        correction = await conn.fetchrow("SELECT * FROM corrections WHERE request_id = 'req-kill'")
    finally:
        await conn.close()
    assert fb is not None and fb["id"] == answer.json()["feedback_id"] and fb["client_id"] == "analyst"
    assert correction is not None and correction["corrected_sql"] == case(7).correct_sql and correction["verified"]
    assert fb["correction_id"] == correction["id"]
