"""``nl2sql-gateway rules ...``: tools for the DBA's rule files."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from gateway import deadline as request_deadline
from gateway.cli_style import CLI_STYLE
from gateway.errors import GatewayError
from gateway.rules.check import check_rules, rls_problems
from gateway.rules.grants import PrivilegeProblem, check_target
from gateway.rules.loading import RuleProblem

app = typer.Typer(**CLI_STYLE, help="Check the DBA rule files (rules/<database>.yaml) against the live schema and the "
                  "gateway's Postgres privileges; print the grants that match them.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


@app.command("check")
def check_command(
    config: Annotated[Path | None, typer.Option(
        "--config", "-c", help="TOML config file (default: $NL2SQL_CONFIG or ./nl2sql-gateway.toml).",
        exists=True, dir_okay=False, envvar="NL2SQL_CONFIG")] = None,
    database: Annotated[str | None, typer.Option(help="Check only this configured database.")] = None,
    rules_dir: Annotated[Path | None, typer.Option(help="Rule files folder (default: the rules_dir "
                                                      "setting).", file_okay=False)] = None,
    role: Annotated[list[str] | None, typer.Option("--role", help="Also check this Postgres role, e.g. an API "
                                                   "key's --pg-role (repeatable).")] = None,
) -> None:
    """Validate rule files: YAML, keys and types, and every table and column against the live schema.

    Also checks the role the gateway connects as: it must not be able to read a hidden column, write
    anything, create objects, or be a superuser or bypass RLS (each line says the fix: `rules grants
    DATABASE --role ROLE --apply`, or a dedicated login role for a superuser or BYPASSRLS role).
    Warns about tables with a row_filter whose row level security is off, or does not apply to the role
    (it owns the table without FORCE, or is a superuser or BYPASSRLS).
    Prints one `file:line: message` (or `database ...: role ...`) per problem. Exit status: 0 clean
    (warnings allowed), 1 errors, 2 usage error or a database that could not be read.
    """
    from gateway.cli import _settings  # the one place that turns --config into Settings

    settings = _settings(config)
    names = sorted(settings.databases)
    if database is not None:
        if database not in settings.databases:
            typer.echo(f"unknown database {database!r}; configured: {', '.join(names) or 'none'}", err=True)
            raise typer.Exit(2)
        names = [database]
    folder = rules_dir or settings.rules_dir
    if not folder.is_dir():  # "0 errors" would read as "your rules are fine"
        typer.echo(f"no rules folder at {folder.absolute()}: nothing was checked. Write {folder}/<database>.yaml "
                   "(`nl2sql-gateway init DSN` starts one), or point --rules-dir or rules_dir at your rules.", err=True)
        raise typer.Exit(2)
    try:
        schemas, privileges, rls = asyncio.run(request_deadline.operation(
            settings.server.operation_timeout_s, _introspect(settings, names, folder, [None, *(role or [])]),
            "rules check"))
    except _Unreadable as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from exc
    except GatewayError as exc:  # the operation's deadline
        typer.echo(f"{exc.code}: {exc.detail}", err=True)
        raise typer.Exit(2) from exc
    problems = check_rules(folder, schemas) + rls
    if database is not None:  # files for other databases are not this run's business
        problems = [p for p in problems if p.severity == "error" or _belongs(p, folder, database)]
    for problem in problems:
        typer.echo(str(problem))
    for privilege in privileges:
        typer.echo(f"{privilege} (fix: {privilege.fix})")
    errors = sum(p.severity == "error" for p in problems) + len(privileges)
    warnings = sum(p.severity == "warning" for p in problems)
    typer.echo(f"{errors} error(s), {warnings} warning(s) in the rules for {', '.join(names) or 'no database'}",
               err=True)
    raise typer.Exit(1 if errors else 0)


class _Unreadable(Exception):
    pass


async def _introspect(settings, names: list[str], folder: Path, roles: list[str | None]):  # type: ignore[no-untyped-def]
    from gateway import errors
    from gateway.execute import Targets
    from gateway.execute.introspect import introspect
    from gateway.execute.rls import table_rls
    from gateway.rules.loading import load_ruleset, rule_files

    subset = settings.model_copy(update={"databases": {n: settings.databases[n] for n in names}})
    targets = await Targets.open(subset)
    try:
        out = {}
        privileges: list[PrivilegeProblem] = []
        rls: list[RuleProblem] = []
        for name in names:
            target = targets.by_name[name]
            try:
                out[name] = await introspect(target, everything=True)
                rules, _ = load_ruleset(name, rule_files(folder, name))
                if target.settings.privilege_check != "off":
                    privileges += await check_target(target, rules, roles)
                for role in roles:  # row filters without row level security behind them
                    facts = await table_rls(target, sorted(rules.row_filters), role)
                    rls += rls_problems(rules.row_filters, facts, role)
            except errors.GatewayError as exc:
                raise _Unreadable(f"database {name!r}: {exc.code}: {exc.detail}") from exc
        return out, privileges, rls
    finally:
        await targets.close()


@app.command("grants")
def grants_command(
    database: Annotated[str, typer.Argument(help="The configured database to write grants for.")],
    config: Annotated[Path | None, typer.Option(
        "--config", "-c", help="TOML config file (default: $NL2SQL_CONFIG or ./nl2sql-gateway.toml).",
        exists=True, dir_okay=False, envvar="NL2SQL_CONFIG")] = None,
    role: Annotated[str | None, typer.Option(help="Role to grant to (default: the role the database's DSN "
                                                  "connects as; give a key's --pg-role to write its grants).")] = None,
    admin_dsn: Annotated[str | None, typer.Option("--admin-dsn", help="A DSN on this database of a role that sees "
                                                  "every table and may grant (an owner or superuser); needed for "
                                                  "--apply. Without it the schema is read through the gateway's "
                                                  "own DSN, which sees only what it may read already.")] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Run the SQL with --admin-dsn instead of only "
                                                        "printing it.")] = False,
    keep_public: Annotated[bool, typer.Option("--keep-public", help="Leave PUBLIC's grants as they are: on "
                                              "tables with hidden columns (then --apply fails while PUBLIC can "
                                              "read one) and on the catalog views that show other sessions' "
                                              "SQL.")] = False,
    revoke_inherited: Annotated[bool, typer.Option("--revoke-inherited", help="When the role reads hidden "
                                                   "columns through a role it is a member of, stop it inheriting "
                                                   "that role's privileges (REVOKE INHERIT OPTION; that role and "
                                                   "its other members keep theirs). Without it such a role is "
                                                   "named and --apply exits 1.")] = False,
    rules_dir: Annotated[Path | None, typer.Option(help="Rule files folder (default: the rules_dir "
                                                      "setting).", file_okay=False)] = None,
) -> None:
    """Print the SQL for a least-privilege role: SELECT on every visible column, nothing on hidden ones.

    USAGE on each schema, column-level SELECT on the columns the rules leave visible, everything else the
    role held directly on those tables, schemas and the database revoked, and (unless --keep-public)
    PUBLIC's privileges on tables with hidden columns and on the catalog views that show other clients' SQL
    revoked. --apply runs it, then asks Postgres (has_column_privilege) whether the role can still read a
    hidden column, and names where from (PUBLIC, a role it inherits from, another grantor's grant). A
    superuser or BYPASSRLS role gets no SQL: no grant limits it; use a dedicated login role. Re-run it after
    changing hidden columns. Exit status: 0 done, 1 rule files with errors, a failed --apply, a role that
    can still read hidden columns after it, or a superuser or BYPASSRLS role; 2 usage error.
    """
    from gateway.cli import _settings  # the one place that turns --config into Settings
    from gateway.execute.privileges import admin_exposure, login_role, run_admin_script
    from gateway.rules.grants import GrantPlan, dedicated_role_fix, plan_grants, still_exposed

    settings = _settings(config)
    db = settings.databases.get(database)
    if db is None:
        typer.echo(f"unknown database {database!r}; configured: {', '.join(sorted(settings.databases)) or 'none'}",
                   err=True)
        raise typer.Exit(2)
    if apply and not admin_dsn:
        typer.echo("--apply needs --admin-dsn (a role that may grant on this database)", err=True)
        raise typer.Exit(2)
    password = db.password.get_secret_value() if db.password else None

    async def build() -> GrantPlan:
        grantee = role or await login_role(db.dsn, password)
        return await plan_grants(admin_dsn or db.dsn, rules_dir or settings.rules_dir, database, grantee,
                                 public_revokes=not keep_public, revoke_inherited=revoke_inherited,
                                 password=None if admin_dsn else password)

    try:
        plan = asyncio.run(request_deadline.operation(
                settings.server.operation_timeout_s, build(), "rules grants"))
    except (ValueError, GatewayError) as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from exc
    before = plan.before
    if before.superuser or before.bypassrls:  # the same command again would not help
        typer.echo(dedicated_role_fix(database, before.role, "superuser" if before.superuser else "bypassrls"),
                   err=True)
        raise typer.Exit(1)
    typer.echo(plan.sql, nl=False)
    if before.inherited and not revoke_inherited:
        names = ", ".join(repr(m) for m in sorted({m for m, _ in before.inherited}))
        typer.echo(f"role {before.role!r} reads hidden columns through role(s) {names} it is a member of: these "
                   "grants do not change that; give them least privilege too, or add --revoke-inherited", err=True)
    if apply:
        assert admin_dsn is not None
        try:
            bound = settings.server.operation_timeout_s
            asyncio.run(request_deadline.operation(bound, run_admin_script(admin_dsn, plan.sql),
                                                   "rules grants --apply"))
            after = asyncio.run(request_deadline.operation(
                bound, admin_exposure(admin_dsn, before.role, plan.hidden), "rules grants --apply"))
        except Exception as exc:  # noqa: BLE001 - report any database refusal as a failed apply
            typer.echo(f"apply failed: {type(exc).__name__}: {exc}", err=True)
            raise typer.Exit(1) from exc
        left = still_exposed(database, after)
        for line in left:
            typer.echo(line, err=True)
        if left:
            typer.echo(f"applied on database {database!r}, but role {before.role!r} can still read hidden columns",
                       err=True)
            raise typer.Exit(1)
        typer.echo(f"applied on database {database!r}; role {before.role!r} can read no hidden column "
                   "(checked with has_column_privilege)", err=True)



def _belongs(problem: RuleProblem, folder: Path, database: str) -> bool:
    path = Path(problem.file)
    return path.parent == folder / database or path.stem == database
