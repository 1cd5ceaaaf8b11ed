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
    name, sep, dsn = value.partition("=")
    if not sep or "://" in name:  # no NAME= prefix (a DSN may carry '=' in its query string)
        name, dsn = "", value
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
