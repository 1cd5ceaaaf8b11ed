"""Without access control (loopback only) every caller is the anonymous admin: the console offers every page
and needs no sign-in."""

from __future__ import annotations

import httpx


async def test_whoami_without_access_control_is_the_anonymous_admin(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/whoami")
    assert r.status_code == 200
    assert r.json() == {"name": "anonymous", "role": "admin", "databases": ["*"], "auth_enabled": False,
                        "user": None, "client": None, "scopes": None, "policy": {}, "store": False}
