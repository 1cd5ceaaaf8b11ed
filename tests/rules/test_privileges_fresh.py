"""Privilege findings a DBA can trust: they follow a rules reload at once, and a superuser login is told a
fix that can work (no grant limits a superuser)."""

from __future__ import annotations

from pathlib import Path

import httpx
from typer.testing import CliRunner

from gateway.api.app import create_app
from gateway.cli import app as cli
from gateway.settings import DatabaseSettings, Settings

ROOT = Path(__file__).resolve().parents[2]


async def test_privilege_findings_follow_a_rules_reload_at_once(demo_dsn: str, tmp_path: Path) -> None:
    # The demo reader may read orders.status; once the rules hide it, that is a privilege problem now.
    rules = tmp_path / "demo.yaml"
    hidden = ("tables:\n  customers: {columns: {email: {hidden: true}}}\n"
              "  employees: {columns: {email: {hidden: true}, salary: {hidden: true}}}\n")
    rules.write_text(hidden)
    app = create_app(Settings(databases={"demo": DatabaseSettings(dsn=demo_dsn, privilege_check="report")},
                              rules_dir=tmp_path))
    async with app.router.lifespan_context(app), \
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        assert (await http.get("/readyz")).json()["privileges"]["demo"] == []
        rules.write_text(hidden + "  orders: {columns: {status: {hidden: true}}}\n")
        app.state.gateway.ruleset("demo")  # the reload a request would trigger
        assert app.state.gateway.ruleset("demo").is_hidden_column("orders", "status")
        ready = (await http.get("/readyz")).json()
    assert ready["privileges"]["demo"] == ["a role can read hidden columns"]


def test_every_fix_for_a_superuser_login_is_a_dedicated_role(demo_admin_dsn: str) -> None:
    env = {"NL2SQL_DATABASES__DEMO__DSN": demo_admin_dsn, "NL2SQL_RULES_DIR": str(ROOT / "rules"),
           "NL2SQL_CONFIG": ""}
    result = CliRunner().invoke(cli, ["rules", "check", "--database", "demo"], env=env)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert any("can read hidden columns" in line for line in lines)  # still said: what the role can do
    # ... but `rules grants --role <superuser> --apply` cannot take anything from a superuser
    assert all("(fix: " in line and "dedicated login role" in line for line in lines), lines
    assert not any("--role postgres" in line or f"--role {demo_admin_dsn}" in line for line in lines)
    assert f"{len(lines)} error(s), 0 warning(s)" in result.stderr
