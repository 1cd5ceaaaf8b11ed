"""`rules check` warns where a row filter has no row-level security behind it, or RLS would not restrain the
role: RLS off, the role owns the table without FORCE, or the role bypasses RLS (real Postgres)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import asyncpg
from typer.testing import CliRunner

from gateway.cli.main import app
from tests.rowpolicy.conftest import RULES, Tenants


def run_check(dsn: str, rules_dir: Path, *args: str) -> tuple[int, str, str]:
    (rules_dir / "db.yaml").write_text(RULES)
    env = {"NL2SQL_DATABASES__DB__DSN": dsn, "NL2SQL_DATABASES__DB__PRIVILEGE_CHECK": "off", "NL2SQL_CONFIG": ""}
    result = CliRunner().invoke(app, ["rules", "check", "--rules-dir", str(rules_dir), *args], env=env)
    return result.exit_code, result.stdout, result.stderr


def rls_warnings(out: str) -> list[str]:
    return [line for line in out.splitlines() if "row level security" in line.lower() or "BYPASSRLS" in line]


def test_row_filters_without_rls_are_reported_per_table(tenants: Tenants, tmp_path: Path) -> None:
    code, out, err = run_check(tenants.filters_dsn, tmp_path)
    assert code == 0, (out, err)  # warnings, not errors: the gateway's filter still applies
    warned = rls_warnings(out)
    for table in ("customers", "orders", "order_items", "notes", "sales.invoices", "events", "events_archive"):
        assert any(f"table {table!r} has a row_filter but row level security is not enabled" in w
                   for w in warned), (table, out)
    assert all(":warning:" not in w and ": warning: " in w for w in warned)
    assert f"0 error(s), {len(warned)} warning(s)" in err


def test_forced_rls_is_clean_and_a_bypassing_role_is_named(tenants: Tenants, tmp_path: Path) -> None:
    code, out, err = run_check(tenants.rls_dsn, tmp_path)
    assert code == 0 and rls_warnings(out) == [], (out, err)

    # The owner of the tables reads through FORCEd policies: still clean.
    _, out, _ = run_check(tenants.rls_dsn, tmp_path, "--role", tenants.owner)
    assert rls_warnings(out) == [], out

    # A superuser is never restrained by RLS.
    _, out, _ = run_check(tenants.rls_admin, tmp_path)
    assert any("superuser or has BYPASSRLS" in w for w in rls_warnings(out)), out


def admin_execute(dsn: str, sql: str) -> None:
    async def run() -> None:
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()
    asyncio.run(run())


def test_an_owner_without_force_is_warned(tenants: Tenants, tmp_path: Path) -> None:
    # Sync: the CLI runs its own event loop.
    member = f"rp_member_{uuid.uuid4().hex[:8]}"
    admin_execute(tenants.rls_admin, f"ALTER TABLE orders NO FORCE ROW LEVEL SECURITY; "
                                     f"CREATE ROLE {member} NOLOGIN IN ROLE {tenants.owner}")
    try:
        # A member of the owning role counts as the owner for RLS.
        _, out, err = run_check(tenants.rls_dsn, tmp_path, "--role", member)
        warned = [w for w in rls_warnings(out) if f"role {member!r} owns table 'orders'" in w]
        assert len(warned) == 1 and "FORCE ROW LEVEL SECURITY" in warned[0], (out, err)
        assert not any("'customers'" in w for w in rls_warnings(out))  # still forced
        # The login role does not own it: no warning for it.
        assert not any("the gateway's login role owns" in w for w in rls_warnings(out)), out
    finally:
        admin_execute(tenants.rls_admin, f"ALTER TABLE orders FORCE ROW LEVEL SECURITY; DROP ROLE IF EXISTS {member}")
