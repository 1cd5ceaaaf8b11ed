"""A database name with NUL in a query parameter is a 422, never a store driver error (found by
tests/api/test_schemathesis.py: GET /v1/guidelines?database=%00 answered 500)."""

from __future__ import annotations

import httpx
import pytest


@pytest.mark.parametrize("path", ["/v1/guidelines", "/v1/examples"])
async def test_nul_in_a_database_name_is_refused(client: httpx.AsyncClient, path: str) -> None:
    response = await client.get(path, params={"database": "demo\x00"})
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "invalid_request"
    assert (await client.get(path, params={"database": "demo"})).status_code != 422
