"""Postgres privileges that match the rules: the grants for a least-privilege role, and what is wrong now.

The static check refuses hidden columns; the role the gateway connects as (and each API key's mapped role)
should be unable to read them anyway, so that either layer alone stops a leak. :func:`grants_sql` writes
the SQL that gives a role exactly the visible columns; :func:`privilege_problems` says where a role has more
than that: a hidden column it can read, a table it can write, a schema or database it can create in, or
superuser / BYPASSRLS, under which no privilege is checked at all.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gateway import errors
from gateway.execute.introspect import Schema
from gateway.execute.pool import Target
from gateway.execute.privileges import Column, Exposure, RoleFacts, admin_exposure, admin_schema, target_role_facts
from gateway.observability import metrics
from gateway.observability.logging import get_logger
from gateway.rules.loading import load_ruleset, rule_files
from gateway.rules.model import RuleSet

if TYPE_CHECKING:
    from gateway.state import GatewayState

log = get_logger(__name__)

# Problem codes (the ``problem`` label of nl2sql_role_privilege_problems) and what each means.
PROBLEMS: dict[str, str] = {
    "missing_role": "does not exist",
    "superuser": "is a superuser (no privilege is checked; it reads every hidden column)",
    "bypassrls": "bypasses row-level security",
    "reads_hidden": "can read hidden columns",
    "can_write": "can insert, update, delete, truncate or add triggers on tables",
    "can_create": "can create objects in schemas or in the database",
}

# Views Postgres grants to PUBLIC that show other clients' SQL with its literals: the gateway's sessions
# share one login role, so another connection's query or a prepared statement is another key's data.
# (pg_stats needs nothing: it only shows columns the role may SELECT.)
PUBLIC_REVOKES = (
    ("VIEW", "pg_catalog.pg_stat_activity", "other sessions' current SQL (same login role)"),
    ("FUNCTION", "pg_catalog.pg_stat_get_activity(integer)", "the function behind pg_stat_activity"),
    ("VIEW", "pg_catalog.pg_prepared_statements", "this session's prepared statements"),
    ("FUNCTION", "pg_catalog.pg_prepared_statement()", "the function behind pg_prepared_statements"),
    ("VIEW", "pg_catalog.pg_cursors", "this session's open cursors and their SQL"),
    ("FUNCTION", "pg_catalog.pg_cursor()", "the function behind pg_cursors"),
)


@dataclass(frozen=True, slots=True)
class PrivilegeProblem:
    """A role that can do more than the rules allow; ``objects`` name what (empty for role attributes)."""

    database: str
    role: str
    code: str
    objects: tuple[str, ...] = ()
    # The role is a superuser: Postgres checks no privilege for it, so no grant or revoke fixes anything.
    superuser: bool = False

    @property
    def summary(self) -> str:
        """Without object names (for logs and /readyz, which must not name hidden columns)."""
        count = f" ({len(self.objects)})" if self.objects else ""
        return f"role {self.role!r} {PROBLEMS[self.code]}{count}"

    def __str__(self) -> str:
        names = f": {', '.join(self.objects)}" if self.objects else ""
        return f"database {self.database!r}: role {self.role!r} {PROBLEMS[self.code]}{names}"

    @property
    def fix(self) -> str:
        """What to run or do about it: no grant limits a superuser, and none stops BYPASSRLS."""
        if self.superuser or self.code in ("superuser", "bypassrls"):
            return dedicated_role_fix(self.database, self.role, "superuser" if self.superuser else self.code)
        if self.code == "missing_role":
            return f"create role {self.role!r}, or map the key to an existing one"
        return f"nl2sql-gateway rules grants {self.database} --role {self.role} --apply --admin-dsn ..."


def dedicated_role_fix(database: str, role: str, code: str) -> str:
    """The fix for a role no grant can limit: a dedicated login role with least privilege."""
    why = ("is a superuser: Postgres checks no privilege for it, so no grant hides a column"
           if code == "superuser" else "bypasses row-level security (BYPASSRLS)")
    return (f"role {role!r} {why}; give the gateway a dedicated login role instead: CREATE ROLE nl2sql_gateway "
            f"LOGIN PASSWORD '...'; then `nl2sql-gateway rules grants {database} --role nl2sql_gateway --apply "
            f"--admin-dsn ...` and point databases.{database}.dsn at it (the password in "
            f"NL2SQL_DATABASES__{database.upper()}__PASSWORD)")


def privilege_problems(facts: RoleFacts, rules: RuleSet) -> list[PrivilegeProblem]:
    """Everything ``facts.role`` may do beyond reading the visible columns of ``rules``."""
    def problem(code: str, objects: Iterable[str] = ()) -> PrivilegeProblem:
        return PrivilegeProblem(facts.database, facts.role, code, tuple(objects), superuser=facts.superuser)

    if not facts.exists:
        return [problem("missing_role")]
    out = []
    if facts.superuser:
        out.append(problem("superuser"))
    if facts.bypassrls:
        out.append(problem("bypassrls"))
    hidden = [f"{_name(s, t)}.{c}" for s, t, c in facts.readable if _hidden(rules, s, t, c)]
    if hidden:
        out.append(problem("reads_hidden", hidden))
    if facts.writable:
        out.append(problem("can_write", (_name(s, t) for s, t in facts.writable)))
    creates = [f"schema {s}" for s in facts.create_schemas]
    if facts.create_database:
        creates.append(f"database {facts.database}")
    if creates:
        out.append(problem("can_create", creates))
    return out


def grants_sql(schema: Schema, rules: RuleSet, role: str, database: str, *, public_revokes: bool = True,
               stop_inheriting: Iterable[tuple[str, str]] = (), inherit_per_grant: bool = True) -> str:
    """The SQL that leaves ``role`` exactly SELECT on the visible columns of ``schema`` (one transaction).

    ``schema`` must be introspected by a role that sees every table (an admin). Everything else ``role``
    held directly on these tables, their schemas and the database is revoked first, so running it again
    after a rule change converges. With ``public_revokes``, PUBLIC loses every privilege on tables with
    hidden columns (a grant to PUBLIC is one to ``role``) and the catalog views that show other clients'
    SQL (this affects every role of the database: grant them back to the roles that need them).
    ``stop_inheriting``: (role, grantor) memberships of ``role`` whose privileges it stops inheriting (the
    roles keep theirs, and SET ROLE to them still works); before Postgres 16 (``inherit_per_grant``
    False) the role inherits from no role at all.

    >>> from gateway.execute.introspect import ColumnInfo, TableInfo
    >>> t = TableInfo("public", "employees", "table", None, 0,
    ...               [ColumnInfo("name", "text", False), ColumnInfo("salary", "numeric", False)])
    >>> rules = RuleSet("hr", hidden_columns=frozenset({"employees.salary"}))
    >>> print([line for line in grants_sql(Schema("hr", [t]), rules, "reader", "hr").splitlines()
    ...        if line.startswith("GRANT SELECT")][0])
    GRANT SELECT ("name") ON TABLE "public"."employees" TO "reader";
    """
    r, db = _ident(role), _ident(database)
    lines = [
        f"-- Least privilege for role {role!r} on database {database!r}: SELECT on each visible column, nothing",
        "-- on hidden columns and tables (rules + live schema; generated by `nl2sql-gateway rules grants`).",
        "BEGIN;",
        f"REVOKE CREATE ON DATABASE {db} FROM {r};",
        f"GRANT CONNECT ON DATABASE {db} TO {r};",
    ]
    hidden_count = 0
    for schema_name in sorted({t.schema for t in schema.tables}):
        s = _ident(schema_name)
        lines += [
            "",
            f"-- schema {schema_name}",
            f"REVOKE ALL ON ALL TABLES IN SCHEMA {s} FROM {r};",  # column privileges go with them
            f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA {s} FROM {r};",
            f"REVOKE CREATE ON SCHEMA {s} FROM {r};",
        ]
        if public_revokes:
            lines.append(f"REVOKE CREATE ON SCHEMA {s} FROM PUBLIC;")
        grants = []
        for table in sorted((t for t in schema.tables if t.schema == schema_name), key=lambda t: t.name):
            columns = [c.name for c in table.columns if not _hidden(rules, table.schema, table.name, c.name)]
            hidden_count += len(table.columns) - len(columns)
            if public_revokes and len(columns) < len(table.columns):  # PUBLIC's grants are every role's
                grants.append(f"REVOKE ALL ON TABLE {s}.{_ident(table.name)} FROM PUBLIC;")
            if columns:
                cols = ", ".join(_ident(c) for c in columns)
                grants.append(f"GRANT SELECT ({cols}) ON TABLE {s}.{_ident(table.name)} TO {r};")
        if grants:
            lines += [f"GRANT USAGE ON SCHEMA {s} TO {r};", *grants]
        else:
            lines.append(f"REVOKE USAGE ON SCHEMA {s} FROM {r};")
    lines += ["", f"-- {hidden_count} hidden column(s) get no grant."]
    inheriting = sorted(set(stop_inheriting))
    if inheriting:
        lines += ["", f"-- Roles {role!r} inherits hidden columns from: it stops inheriting their privileges."]
        if inherit_per_grant:
            lines += [f"REVOKE INHERIT OPTION FOR {_ident(m)} FROM {r} GRANTED BY {_ident(g)};" for m, g in inheriting]
        else:
            lines.append(f"ALTER ROLE {r} NOINHERIT;  -- before Postgres 16: from every role")
    if public_revokes:
        lines += ["", "-- PUBLIC's catalog views that show other clients' SQL (every role of this database)."]
        for kind, name, why in PUBLIC_REVOKES:
            what = "EXECUTE ON FUNCTION" if kind == "FUNCTION" else "SELECT ON"
            lines.append(f"REVOKE {what} {name} FROM PUBLIC;  -- {why}")
    lines += rls_sql(schema, rules)
    lines.append("COMMIT;")
    return "\n".join(lines) + "\n"


def rls_sql(schema: Schema, rules: RuleSet) -> list[str]:
    """RLS statements equivalent to the rules' row filters, so a DBA can move from the gateway's filters to
    Postgres's policies: each ``{claim.X}`` becomes ``NULLIF(current_setting('nl2sql.X', true), '')`` cast to
    the type of the filter's column (text when the filter reads several), which matches no row without X.

    >>> from gateway.execute.introspect import ColumnInfo, TableInfo
    >>> from gateway.rules.row_filters import parse_row_filter
    >>> t = TableInfo("public", "orders", "table", None, 0, [ColumnInfo("tenant_id", "integer", False)])
    >>> rules = RuleSet("db", row_filters={"orders": parse_row_filter("orders", "tenant_id = {claim.tenant_id}")})
    >>> for line in rls_sql(Schema("db", [t]), rules)[2:]:  # doctest: +ELLIPSIS
    ...     print(line)
    ALTER TABLE "public"."orders" ENABLE ROW LEVEL SECURITY;
    ALTER TABLE "public"."orders" FORCE ROW LEVEL SECURITY;
    CREATE POLICY nl2sql_row_filter ON "public"."orders" USING (tenant_id = NULLIF(...)::integer);
    """
    from gateway.rules.row_filters import ALIAS

    lines: list[str] = []
    for key, row_filter in sorted(rules.row_filters.items()):
        table = schema.table(key)
        if table is None:
            lines += ["", f"-- row filter of {key}: no such table in the live schema"]
            continue
        types = {c.name: c.type for c in table.columns}
        cast = types.get(next(iter(row_filter.columns)), "text") if len(row_filter.columns) == 1 else "text"
        parts = [piece.replace(f"{ALIAS}.", "") if kind == "text"
                 else f"NULLIF(current_setting('nl2sql.{piece}', true), '')::{cast}"
                 for kind, piece in row_filter.pieces]
        name = f"{_ident(table.schema)}.{_ident(table.name)}"
        lines += ["", f"-- row filter of {key} (rules), enforced by Postgres for every path",
                  f"ALTER TABLE {name} ENABLE ROW LEVEL SECURITY;", f"ALTER TABLE {name} FORCE ROW LEVEL SECURITY;",
                  f"CREATE POLICY nl2sql_row_filter ON {name} USING ({''.join(parts)});"]
    return lines


async def database_grants(admin_dsn: str, rules_dir: Path, database: str, role: str, *,
                          public_revokes: bool = True, password: str | None = None) -> str:
    """:func:`grants_sql` for the configured ``database`` (its rule files, the live schema via ``admin_dsn``).

    Raises ValueError when the rule files do not load: grants from broken rules could expose what they hide.
    """
    plan = await plan_grants(admin_dsn, rules_dir, database, role, public_revokes=public_revokes, password=password)
    return plan.sql


@dataclass(frozen=True, slots=True)
class GrantPlan:
    """The grants script for a role, and where the role may read hidden columns from before it runs."""

    sql: str
    hidden: list[Column]
    before: Exposure


async def plan_grants(admin_dsn: str, rules_dir: Path, database: str, role: str, *, public_revokes: bool = True,
                      revoke_inherited: bool = False, password: str | None = None) -> GrantPlan:
    """:func:`grants_sql` with the role's exposure; with ``revoke_inherited`` the script also stops the role
    inheriting from the roles it reads hidden columns through. ValueError on rule files with errors."""
    rules, problems = load_ruleset(database, rule_files(Path(rules_dir), database))
    broken = [str(p) for p in problems if p.severity == "error"]
    if broken:
        raise ValueError("the rule files have errors; fix them first (`nl2sql-gateway rules check`):\n"
                         + "\n".join(broken))
    schema, pg_database = await admin_schema(admin_dsn, database, password)
    hidden = hidden_columns(schema, rules)
    before = await admin_exposure(admin_dsn, role, hidden, password)
    sql = grants_sql(schema, rules, role, pg_database, public_revokes=public_revokes,
                     stop_inheriting=before.inherited if revoke_inherited else (),
                     inherit_per_grant=before.inherit_per_grant)
    return GrantPlan(sql, hidden, before)


def hidden_columns(schema: Schema, rules: RuleSet) -> list[Column]:
    """Every (schema, table, column) of ``schema`` the rules hide."""
    return [(t.schema, t.name, c.name) for t in schema.tables for c in t.columns
            if _hidden(rules, t.schema, t.name, c.name)]


def still_exposed(database: str, after: Exposure) -> list[str]:
    """Why ``after`` (the exposure re-read once the grants ran) still leaves hidden columns readable, one line
    per cause and the columns it exposes; empty when the grants converged."""
    if after.superuser or after.bypassrls:
        return [dedicated_role_fix(database, after.role, "superuser" if after.superuser else "bypassrls")]
    by_source: dict[str, list[str]] = {}
    for (s, t, c), sources in sorted(after.readable.items()):
        for source in sources:
            by_source.setdefault(source, []).append(f"{_name(s, t)}.{c}")
    hints = {"PUBLIC": "PUBLIC holds a grant on them (run without --keep-public to revoke it)",
             "a direct grant": "a grant to the role that the admin DSN could not revoke (another grantor's)"}
    for member, _ in after.inherited:
        hints[f"role {member!r}"] = (f"it inherits them from role {member!r}: give that role least privilege "
                                     f"(`nl2sql-gateway rules grants {database} --role {member} --apply ...`) or "
                                     "stop inheriting it (--revoke-inherited)")
    lines = []
    for source, columns in by_source.items():
        why = hints.get(source, source)
        lines.append(f"role {after.role!r} can still read hidden columns {', '.join(columns)}: {why}")
    return lines


async def check_target(target: Target, rules: RuleSet, roles: Iterable[str | None] = (None,)) -> list[PrivilegeProblem]:
    """The problems of each role on ``target`` (None: the login role); DatabaseUnavailable when it is down."""
    facts = await target_role_facts(target, list(dict.fromkeys(roles)))
    return [p for f in facts for p in privilege_problems(f, rules)]


# How long a /readyz answer reuses the last privilege check before asking Postgres again.
RECHECK_S = 60.0
# Longest one database's check may take (at start-up and in /readyz) before it counts as unchecked.
CHECK_TIMEOUT_S = 2.0


@dataclass
class PrivilegeReport:
    """The last privilege check per database, for start-up, /readyz and the metric."""

    problems: dict[str, list[PrivilegeProblem]] = field(default_factory=dict)
    unchecked: dict[str, str] = field(default_factory=dict)  # database -> why it could not be checked
    checked_at: float = 0.0
    rules: dict[str, RuleSet] = field(default_factory=dict)  # the rules each database was checked against

    def stale(self, rules_for: Callable[[str], RuleSet] | None = None) -> bool:
        """Older than RECHECK_S, or checked against rules that were reloaded since: what is hidden decides
        what a role may not read, so a reload is answered with the new findings at once."""
        if time.monotonic() - self.checked_at > RECHECK_S:
            return True
        if rules_for is None:
            return False
        for name, checked in self.rules.items():
            try:
                if rules_for(name) != checked:
                    return True
            except errors.GatewayError:  # rules_unavailable now: the check says so
                return True
        return False

    def details(self, database: str) -> list[str]:
        """Summaries without object names, for logs and the DBA's rules view (they name the roles)."""
        if database in self.unchecked:
            return [f"not checked: {self.unchecked[database]}"]
        return [p.summary for p in self.problems.get(database, ())]

    def public(self, database: str) -> list[str]:
        """What /readyz may say to anyone: which kinds of problem there are, naming no role, table or column
        (``rules check`` and the DBA's rules view name them)."""
        if database in self.unchecked:
            return ["not checked"]
        return sorted({f"a role {PROBLEMS[p.code]}" for p in self.problems.get(database, ())})


_reported: dict[str, set[tuple[str, str]]] = {}  # label sets set per database, zeroed once fixed


async def check_privileges(targets: dict[str, Target], rules_for: Callable[[str], RuleSet],
                           key_roles: dict[str, set[str]], *, log_each: bool = True) -> PrivilegeReport:
    """Check the login role and each key's mapped role of every target whose ``privilege_check`` is not off.

    ``rules_for(name)`` gives a database's rule set; ``key_roles`` the mapped roles per database. Sets
    ``nl2sql_role_privilege_problems{database,role,problem}`` and logs one line per database.
    """
    report = PrivilegeReport(checked_at=time.monotonic())
    for name, target in targets.items():
        if target.settings.privilege_check == "off":
            continue
        try:  # bounded: a database behind a network cut must not hold start-up or /readyz
            rules = rules_for(name)  # rules_unavailable: a database not served is not checked either
            report.rules[name] = rules
            found = await asyncio.wait_for(check_target(target, rules, [None, *sorted(key_roles.get(name, ()))]),
                                           timeout=CHECK_TIMEOUT_S)
        except (errors.GatewayError, TimeoutError) as exc:
            reason = exc.code if isinstance(exc, errors.GatewayError) else "timeout"
            report.unchecked[name] = reason
            log.warning("role_privileges_unchecked", database=name, reason=reason)
            continue
        report.problems[name] = found
        now = {(p.role, p.code): max(len(p.objects), 1) for p in found}
        for role, code in _reported.get(name, set()) - now.keys():  # fixed since the last check
            metrics.ROLE_PRIVILEGE_PROBLEMS.labels(name, role, code).set(0)
        for (role, code), count in now.items():
            metrics.ROLE_PRIVILEGE_PROBLEMS.labels(name, role, code).set(count)
        _reported[name] = set(now)
        if log_each:
            if found:
                log.warning("role_privileges", database=name, problems=[p.summary for p in found],
                            fix=sorted({p.fix for p in found}))
            else:
                log.info("role_privileges", database=name, problems=[])
    return report


async def report_privileges(state: GatewayState, *, log_each: bool = True) -> PrivilegeReport:
    """Check every target's login role and the mapped roles of active API keys; kept on ``state``."""
    from gateway.store import api_keys

    key_roles: dict[str, set[str]] = {}
    if state.store is not None:
        try:
            keys = await asyncio.wait_for(api_keys.list_all(state.store.pool, include_revoked=False),
                                          timeout=CHECK_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - the store being down must not stop start-up or /readyz
            log.warning("role_privileges_keys_unread", error=type(exc).__name__)
            keys = []
        for key in keys:
            if key.pg_role:
                for name in state.targets.by_name:
                    if "*" in key.databases or name in key.databases:
                        key_roles.setdefault(name, set()).add(key.pg_role)
    report = await check_privileges(state.targets.by_name, state.ruleset, key_roles, log_each=log_each)
    state.extras["privileges"] = report
    return report


def _hidden(rules: RuleSet, schema: str, table: str, column: str) -> bool:
    return rules.is_hidden_column(table, column) or rules.is_hidden_column(f"{schema}.{table}", column)


def _name(schema: str, table: str) -> str:
    return table if schema == "public" else f"{schema}.{table}"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
