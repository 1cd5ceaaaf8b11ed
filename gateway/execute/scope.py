"""Reads made on behalf of one caller: its Postgres role and its row-policy values, inside the transaction.

The context stage reads sample values for a caller as the caller: ``SET LOCAL ROLE`` makes the role's GRANTs
apply, and each row-policy value ``name -> value`` becomes the transaction-local setting ``nl2sql.<name>``
(``set_config(name, value, true)``, bound as parameters), which row-level security policies read with
``NULLIF(current_setting('nl2sql.<name>', true), '')``. Both end with the transaction; nothing stays on the
pooled connection. A name Postgres refuses as a setting name fails the read: the caller then gets no values
from it (fail closed), never the unfiltered ones.

The execution path (gateway.execute.run) sets the same role and settings for the caller's queries.
"""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from gateway.execute.claims import PREFIX as SETTING_PREFIX
from gateway.execute.claims import check_claims

# One round trip for every value, each bound as a parameter (never spliced into the text).
SET_CLAIMS_SQL = ("SELECT count(set_config($1 || c.name, c.value, true)) "
                  "FROM unnest($2::text[], $3::text[]) AS c(name, value)")


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def set_role_sql(role: str) -> str:
    """``SET LOCAL ROLE`` with the role quoted as one identifier (a name with quotes or ``;`` stays one name)."""
    return f"SET LOCAL ROLE {quote_ident(role)}"


async def enter(conn: asyncpg.Connection, role: str | None, claims: Sequence[tuple[str, str]]) -> None:
    """Act as ``role`` (None: the connection's own) with ``claims`` set, until the transaction ends.

    Must run inside a transaction (``SET LOCAL`` and ``set_config(..., true)`` are transaction-local). Names
    and values are held to the rules the execution path applies (``row_policy_claim_invalid`` otherwise).
    """
    if claims:
        check_claims(claims)
        await conn.fetchval(SET_CLAIMS_SQL, SETTING_PREFIX, [n for n, _ in claims], [v for _, v in claims])
    if role:
        await conn.execute(set_role_sql(role))
