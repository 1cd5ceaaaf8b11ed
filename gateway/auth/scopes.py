"""What an end user's access token lets it do: one scope check per kind of operation, on every transport.

An OAuth token carries scopes (``Principal.scopes``); an API key carries none and is not scope-limited
(``scopes is None``), and neither is the local user of stdio MCP or the CLI. The :class:`Gateway` operations
check the scope of their :class:`Operation` before anything else (``Gateway.check_scope``), so the same token
is refused the same thing over ``/v1``, over MCP on HTTP and anywhere else: a token granted only
``nl2sql:schema`` for a connector cannot run SQL by calling ``POST /v1/sql`` instead of ``run_sql``.

Which scopes an operation accepts is configured in ``[auth.oidc]`` (``schema_scopes``, ``query_scopes``,
``ask_scopes``, ``feedback_scopes``): any one of them suffices, an empty list accepts every token.
"""

from __future__ import annotations

import enum

from gateway import errors
from gateway.auth.keys import Principal
from gateway.settings import OidcSettings


class Operation(enum.Enum):
    """The kinds of operation a scope grants; each MCP tool and ``/v1`` route is one of them."""

    SCHEMA = "schema"      # read the databases' names, schemas, rules summaries and guidelines
    QUERY = "query"        # run or check SQL the client wrote
    ASK = "ask"            # have the gateway's LLM answer a question
    FEEDBACK = "feedback"  # say whether an answer was right


def accepted(settings: OidcSettings | None, operation: Operation) -> list[str]:
    """The scopes any one of which lets a token do ``operation``; empty: every token may."""
    if settings is None:  # no end users: nothing carries scopes
        return []
    return list(getattr(settings, f"{operation.value}_scopes"))


def permits(principal: Principal, operation: Operation, settings: OidcSettings | None) -> bool:
    if principal.scopes is None:  # an API key or the local user: not scope-limited
        return True
    wanted = accepted(settings, operation)
    return not wanted or any(scope in principal.scopes for scope in wanted)


def check(principal: Principal, operation: Operation, settings: OidcSettings | None) -> None:
    """Raise ``insufficient_scope`` (403) when the principal's token does not grant ``operation``.

    The problem names the scope to ask for (``required_scopes``: the first accepted one, what the
    ``WWW-Authenticate`` challenge's ``scope`` says, so an MCP client can step up to it) and every scope
    that would do (``accepted_scopes``).
    """
    if permits(principal, operation, settings):
        return
    wanted = accepted(settings, operation)
    raise errors.InsufficientScope(
        f"the access token grants none of the scopes that allow {operation.value} operations "
        f"({' '.join(wanted)}); authorize again asking for {wanted[0]}",
        required_scopes=wanted[:1], accepted_scopes=wanted, operation=operation.value)
