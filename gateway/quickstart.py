"""``serve --dsn``: the gateway in front of one's own databases with no config file.

A DSN on the command line names a database to serve; access control is off, so the server listens on
loopback only (``gateway.auth.check_exposure`` refuses anything else), and no store database is needed.
Everything else (LLM endpoint, limits) still comes from the config file and the environment as usual.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit

from pydantic import SecretStr

from gateway.settings import ConfigError, DatabaseSettings, Settings

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,62}$")


def parse_dsn_option(value: str) -> tuple[str, DatabaseSettings]:
    """``[NAME=]postgresql://...`` -> (name, settings); the name defaults to the DSN's database.

    A password in the URL is moved out of the DSN (which may be shown or logged) into the secret field.

    >>> name, db = parse_dsn_option("sales=postgresql://reader:pw@db:5432/sales_prod")
    >>> name, db.dsn, db.password.get_secret_value()
    ('sales', 'postgresql://reader@db:5432/sales_prod', 'pw')
    >>> parse_dsn_option("postgresql://reader@/shop?host=/tmp")[0]
    'shop'
    """
    name, dsn = _split(value)
    parts = urlsplit(dsn)
    if parts.scheme not in {"postgres", "postgresql"}:
        raise ConfigError(f"--dsn {value!r}: expected [NAME=]postgresql://user@host:port/database")
    if not name:
        name = unquote(parts.path.lstrip("/")) or parse_qs(parts.query).get("dbname", [""])[0] or "db"
    if not NAME.match(name):
        raise ConfigError(f"--dsn {value!r}: the database name {name!r} must be letters, digits, '_' or '-' "
                          "(name it explicitly: --dsn NAME=postgresql://...)")
    password = None
    if parts.password is not None:
        password = SecretStr(unquote(parts.password))
        userinfo = parts.netloc.rpartition("@")[0].partition(":")[0]
        netloc = f"{userinfo}@{parts.netloc.rpartition('@')[2]}"
        dsn = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return name, DatabaseSettings(dsn=dsn, password=password)


def apply_dsn_options(settings: Settings, values: list[str]) -> None:
    """Serve exactly the databases named by ``--dsn``, on loopback, without access control."""
    databases: dict[str, DatabaseSettings] = {}
    for value in values:
        name, database = parse_dsn_option(value)
        if name in databases:
            raise ConfigError(f"--dsn: two databases named {name!r}; name them: --dsn NAME=postgresql://...")
        databases[name] = database
    settings.databases = databases
    settings.auth.enabled = False  # no keys to hand out; check_exposure keeps the server on loopback


def check_exposure_of_dsn(host: str) -> None:
    """``--dsn`` turns access control off, so it serves on loopback only: say what does work instead of
    the general advice (turn auth on), which ``--dsn`` would turn off again."""
    from gateway.auth import is_loopback

    if not is_loopback(host):
        raise ConfigError(
            f"--dsn serves without access control, so on a loopback address only, not on --host {host}: drop "
            "--host (or use --host 127.0.0.1), or to share the gateway write a config file with "
            "`nl2sql-gateway init postgresql://...`, turn access control on there (auth.enabled, store.dsn "
            "for API keys) and run `nl2sql-gateway serve` without --dsn")


def reach_dsn_databases(settings: Settings, values: list[str]) -> None:
    """Connect once to each ``--dsn`` database: a wrong database, role, host or port stops the start
    with the ``--dsn`` the user wrote (password left out), not a later warning naming settings."""
    import asyncio

    from gateway.execute.pool import probe

    async def every() -> list[str | None]:
        return list(await asyncio.gather(*(probe(db, name, "--dsn") for name, db in settings.databases.items())))

    problems = [(value, why) for value, why in zip(values, asyncio.run(every()), strict=True) if why]
    if problems:
        raise ConfigError("\n".join(f"--dsn {_shown(value)}: {why}" for value, why in problems))


def password_warning(values: list[str]) -> str | None:
    """A warning when a ``--dsn`` carries a password: the command line is visible in ``ps`` and shell history."""
    if not any(urlsplit(_split(value)[1]).password for value in values):
        return None
    return ("warning: the password in --dsn is visible to other users of this machine (ps) and in your shell "
            "history; leave it out of the URL and set PGPASSWORD, or put it in ~/.pgpass (a libpq passfile), "
            "or write a config file with `nl2sql-gateway init` and export NL2SQL_DATABASES__NAME__PASSWORD")


def _split(value: str) -> tuple[str, str]:
    """``[NAME=]DSN`` -> (NAME or "", DSN)."""
    name, sep, dsn = value.partition("=")
    if not sep or "://" in name:  # no NAME= prefix (a DSN may carry '=' in its query string)
        return "", value
    return name, dsn


def _shown(value: str) -> str:
    """``value`` as written, with any password replaced by ``***``.

    >>> _shown("sales=postgresql://reader:pw@db/sales")
    'sales=postgresql://reader:***@db/sales'
    """
    name, dsn = _split(value)
    parts = urlsplit(dsn)
    if parts.password is None:
        return value
    userinfo, _, host = parts.netloc.rpartition("@")
    netloc = f"{userinfo.partition(':')[0]}:***@{host}"
    return (f"{name}=" if name else "") + urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
