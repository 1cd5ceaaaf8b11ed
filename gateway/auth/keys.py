"""API keys and what they allow: tokens, their hashes, roles and the principal a request acts as.

A token reads ``nl2sql_<id>_<secret>``: ``id`` is 12 hex characters, public, used to find the key in the
store; ``secret`` is 32 random bytes in hex. Only the SHA-256 of the secret is stored. A slow password hash
would add nothing here: the secret is random and 256 bits long, so it cannot be guessed from its hash.

>>> token = new_token()
>>> key_id, secret = parse_token(token.token)
>>> key_id == token.key_id and secret_matches(secret, token.secret_sha256)
True
>>> Role.DBA.allows(Role.CLIENT), Role.CLIENT.allows(Role.DBA)
(True, False)
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import secrets
import string
from dataclasses import dataclass

from gateway import errors

PREFIX = "nl2sql"
ALL_DATABASES = "*"
_ID_CHARS = 12
_SECRET_CHARS = 64
_HEX = frozenset(string.hexdigits.lower())


class Role(enum.Enum):
    """Roles nest: a dba may do what a client may, an admin what a dba may."""

    CLIENT = "client"
    DBA = "dba"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return _RANKS[self]

    def allows(self, required: Role) -> bool:
        return self.rank >= required.rank


_RANKS = {Role.CLIENT: 0, Role.DBA: 1, Role.ADMIN: 2}


@dataclass(frozen=True, slots=True)
class NewToken:
    key_id: str
    token: str
    secret_sha256: bytes


def new_token() -> NewToken:
    key_id = secrets.token_hex(_ID_CHARS // 2)
    secret = secrets.token_hex(_SECRET_CHARS // 2)
    return NewToken(key_id, f"{PREFIX}_{key_id}_{secret}", hash_secret(secret))


def hash_secret(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("ascii")).digest()


def secret_matches(secret: str, stored_sha256: bytes) -> bool:
    return hmac.compare_digest(hash_secret(secret), stored_sha256)


def parse_token(token: str) -> tuple[str, str]:
    """``(key_id, secret)`` of a well-formed token; ``unauthorized`` otherwise (the token is not echoed)."""
    prefix, _, rest = token.partition("_")
    key_id, _, secret = rest.partition("_")
    if (prefix != PREFIX or len(key_id) != _ID_CHARS or len(secret) != _SECRET_CHARS
            or not set(key_id) <= _HEX or not set(secret) <= _HEX):
        raise errors.Unauthorized(f"the bearer token is not a gateway API key ({PREFIX}_<id>_<secret>)")
    return key_id, secret


def key_id_of(authorization: str | None) -> str | None:
    """The public key id in an ``Authorization`` header, unverified (for per-key rate limits and logs)."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return None
    try:
        return parse_token(token.strip())[0]
    except errors.Unauthorized:
        return None


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts as, built once at the edge (gateway.auth.authenticator) and handed to ``Gateway``.

    A service calls with an API key (``key_id``); an end user with a verified OIDC access token (``user``,
    the stable subject id, and ``client``, the OAuth client the token was issued to). ``anonymous`` with auth
    off. ``claims`` are the row-policy values taken from the token (name -> text, sorted by name): Postgres
    reads them as transaction-local settings, the gateway binds them into the rules' row filters.
    ``scopes``: what the token was granted (None for API keys, which are not scope-limited).
    """

    name: str
    role: Role
    databases: frozenset[str]
    pg_role: str | None = None
    key_id: str | None = None
    user: str | None = None
    client: str | None = None
    claims: tuple[tuple[str, str], ...] = ()
    scopes: frozenset[str] | None = None

    @property
    def owner(self) -> str:
        """Who owns what this principal leaves behind (conversations, feedback, audit rows, limits):
        the end user when there is one, the API key otherwise, the name of a keyless principal last."""
        if self.user is not None:
            return f"user:{self.user}"
        if self.key_id is not None:
            return f"key:{self.key_id}"
        return f"name:{self.name}"

    @property
    def policy(self) -> dict[str, str]:
        """The row-policy values as a mapping (name -> value)."""
        return dict(self.claims)

    @property
    def partition(self) -> str:
        """Whose prepared statements a pooled connection may keep for this principal
        (gateway.execute.statements): the owner, the Postgres role and the row-policy values."""
        claims = ",".join(f"{k}={v!r}" for k, v in self.claims)
        return f"{self.owner}|role:{self.pg_role or ''}|claims:{claims}"

    def __post_init__(self) -> None:
        # Names become settings (nl2sql.<name>) and values reach Postgres: refuse what cannot be applied
        # safely once, where the principal is built (gateway.execute.claims).
        if self.claims:
            from gateway.execute.claims import check_claims  # the auth layer stays free of the execute package

            check_claims(self.claims)

    def has_scope(self, scope: str) -> bool:
        """True when the principal is not scope-limited (an API key) or its token grants ``scope``."""
        return self.scopes is None or scope in self.scopes

    def may_use(self, database: str) -> bool:
        return ALL_DATABASES in self.databases or database in self.databases

    def check_database(self, database: str) -> None:
        """Raise ``forbidden`` unless this key may use ``database``."""
        if not self.may_use(database):
            raise errors.Forbidden(f"API key {self.name!r} may not use database {database!r}",
                                   database=database, key=self.key_id)

    def check_role(self, required: Role) -> None:
        if not self.role.allows(required):
            raise errors.Forbidden(f"API key {self.name!r} has role {self.role.value!r}; this needs "
                                   f"{required.value!r} or above", required_role=required.value, key=self.key_id)


ANONYMOUS = Principal(name="anonymous", role=Role.ADMIN, databases=frozenset({ALL_DATABASES}))
