"""Who owns what a request leaves behind: audit rows, feedback, corrections, example proposals,
conversations, rate-limit buckets and the daily token budget.

The owner is decided here, once, for every adapter (HTTP, MCP, console, Python) through ``Gateway``:

- an end user (a verified token's subject): ``user:<id>``, whichever OAuth client or key the request came
  through, so two users behind one frontend own separate conversations and answers;
- else an API key: ``key:<id>``; a key's owner is never a header its caller chooses;
- else (auth off, every caller is the local admin) the ``X-Client-Id`` header, or ``anonymous``.

``via`` records what the request came through (``key:<id>`` or ``client:<OAuth client id>``) and
``end_user`` the user's stable id; both are recorded, never used to decide access.

>>> from gateway.auth import Principal, Role
>>> alice = Principal("alice", Role.CLIENT, frozenset({"demo"}), user="alice", client="bi-frontend")
>>> owner_of(alice, "spoofed")
Owner(id='user:alice', end_user='alice', via='client:bi-frontend')
>>> owner_of(Principal("etl", Role.CLIENT, frozenset({"demo"}), key_id="0123456789ab"), "spoofed").id
'key:0123456789ab'
>>> owner_of(Principal("anonymous", Role.ADMIN, frozenset({"*"})), "alice").id
'alice'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway import errors
from gateway.auth.keys import Principal, Role

__all__ = ["ANONYMOUS", "Owner", "client_header", "owner_of", "reviews"]

ANONYMOUS = "anonymous"
_CLIENT_ID = re.compile(r"^[A-Za-z0-9._:@-]{1,128}$")


@dataclass(frozen=True, slots=True)
class Owner:
    id: str  # what rows are keyed and filtered by
    end_user: str | None = None
    via: str | None = None


def owner_of(principal: Principal, client: str | None = None) -> Owner:
    """The owner of what ``principal`` leaves behind; ``client`` (the ``X-Client-Id`` header) counts only for
    a principal that is neither an end user nor an API key (auth off)."""
    if principal.client is not None:
        via: str | None = f"client:{principal.client}"
    elif principal.key_id is not None:
        via = f"key:{principal.key_id}"
    else:
        via = None
    if principal.user is not None or principal.key_id is not None:
        return Owner(principal.owner, principal.user, via)
    return Owner(client_header(client), None, via)


def client_header(header: str | None) -> str:
    """The ``X-Client-Id`` header as an owner (auth off): ``anonymous`` when absent; ``invalid_request``
    when it is not 1-128 characters of letters, digits and ``._:@-``."""
    if header is None or header == "":
        return ANONYMOUS
    if not _CLIENT_ID.match(header):
        raise errors.InvalidRequest("X-Client-Id must be 1-128 characters of letters, digits and ._:@-",
                                    header="X-Client-Id")
    return header


def reviews(principal: Principal) -> bool:
    """True when what ``principal`` proposes counts as reviewed: an authenticated dba or admin (an API key or
    an end user). The local admin with auth off proposes like a client."""
    authenticated = principal.key_id is not None or principal.user is not None
    return authenticated and principal.role.allows(Role.DBA)
