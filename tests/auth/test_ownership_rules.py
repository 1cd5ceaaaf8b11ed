"""gateway.auth.ownership: who owns what a request leaves behind, decided once for every adapter."""

from __future__ import annotations

import doctest

import pytest

from gateway import errors
from gateway.auth import ANONYMOUS, Principal, Role, ownership
from gateway.auth.ownership import owner_of, reviews


def test_doctests() -> None:
    assert doctest.testmod(ownership).failed == 0


KEY = Principal(name="frontend", role=Role.CLIENT, databases=frozenset({"demo"}), key_id="0123456789ab")


@pytest.mark.parametrize("header", [None, "", "user:alice", "key:0123456789ab", "anonymous", "alice"])
def test_a_header_never_changes_an_authenticated_owner(header: str | None) -> None:
    alice = Principal(name="Alice Example", role=Role.CLIENT, databases=frozenset({"demo"}), user="alice",
                      client="bi-frontend")
    bob_via_key = Principal(name="bob", role=Role.CLIENT, databases=frozenset({"demo"}), key_id="0123456789ab",
                            user="bob")
    assert owner_of(alice, header).id == "user:alice"
    assert owner_of(KEY, header).id == "key:0123456789ab"
    # An end user behind a key owns their own rows; the key is only what it came through.
    assert owner_of(bob_via_key, header) == ownership.Owner("user:bob", "bob", "key:0123456789ab")


def test_with_auth_off_the_header_names_the_owner_and_is_checked() -> None:
    assert owner_of(ANONYMOUS, None).id == owner_of(ANONYMOUS, "").id == "anonymous"
    assert owner_of(ANONYMOUS, "analyst@team").id == "analyst@team"
    for bad in ("has space", "x" * 129, "semi;colon", "new\nline"):
        with pytest.raises(errors.InvalidRequest):
            owner_of(ANONYMOUS, bad)


def test_only_an_authenticated_dba_or_admin_reviews() -> None:
    assert not reviews(ANONYMOUS)  # the local admin with auth off proposes like a client
    assert not reviews(KEY)
    assert reviews(Principal(name="d", role=Role.DBA, databases=frozenset({"*"}), key_id="0123456789ab"))
    assert reviews(Principal(name="u", role=Role.ADMIN, databases=frozenset({"*"}), user="u", client="c"))
    assert not reviews(Principal(name="u", role=Role.CLIENT, databases=frozenset({"*"}), user="u", client="c"))
