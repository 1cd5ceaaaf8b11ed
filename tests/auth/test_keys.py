"""Tokens, hashes and principals, without I/O."""

from __future__ import annotations

import doctest

import pytest

from gateway import auth, errors
from gateway.auth import keys
from gateway.auth.keys import Principal, Role


def test_doctests() -> None:
    assert doctest.testmod(keys).failed == 0


def test_tokens_are_unique_and_their_secret_is_not_stored() -> None:
    made = [keys.new_token() for _ in range(200)]
    assert len({t.token for t in made}) == len({t.key_id for t in made}) == 200
    for t in made[:5]:
        _, secret = keys.parse_token(t.token)
        assert secret.encode() not in t.secret_sha256 and len(t.secret_sha256) == 32
        assert not keys.secret_matches(secret[:-1] + ("0" if secret[-1] != "0" else "1"), t.secret_sha256)


def test_key_id_of_reads_the_public_part_only_from_a_well_formed_bearer_header() -> None:
    token = keys.new_token()
    assert keys.key_id_of(f"Bearer {token.token}") == token.key_id
    assert keys.key_id_of(f"Basic {token.token}") is None
    assert keys.key_id_of("Bearer nl2sql_xyz") is None
    assert keys.key_id_of(None) is None


def test_principal_databases_and_roles() -> None:
    p = Principal(name="bi", role=Role.CLIENT, databases=frozenset({"sales"}))
    assert p.may_use("sales") and not p.may_use("hr")
    with pytest.raises(errors.Forbidden):
        p.check_database("hr")
    with pytest.raises(errors.Forbidden):
        p.check_role(Role.DBA)
    p.check_role(Role.CLIENT)
    assert Principal(name="all", role=Role.DBA, databases=frozenset({"*"})).may_use("hr")
    assert [r for r in Role if Role.DBA.allows(r)] == [Role.CLIENT, Role.DBA]


def test_public_surface_is_sorted() -> None:
    assert auth.__all__ == sorted(auth.__all__)
