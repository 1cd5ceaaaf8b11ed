"""Access control: API keys with a role, the databases they may use and an optional Postgres role.

- ``keys``: tokens (``nl2sql_<id>_<secret>``, only the secret's SHA-256 stored), roles, :class:`Principal`.
- ``authenticator``: bearer token -> principal through a short-lived cache; the loopback-only rule.
- ``access``: the role each route needs and the FastAPI dependency that enforces it.
- ``cli``: ``nl2sql-gateway keys create|list|revoke``.
"""

from gateway.auth.authenticator import Authenticator, check_exposure, is_loopback
from gateway.auth.keys import ALL_DATABASES, ANONYMOUS, Principal, Role, key_id_of, new_token

__all__ = ["ALL_DATABASES", "ANONYMOUS", "Authenticator", "Principal", "Role", "check_exposure", "is_loopback",
           "key_id_of", "new_token"]
