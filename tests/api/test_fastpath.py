"""Compiled routes (gateway.api.fastpath) answer exactly as FastAPI's own path does.

Every request below is sent twice, once with the compiled path on and once with it off, with the same request
id; status, the headers a client reads and the body must be the same (``timings`` aside, which measure the
request itself). The compiled path must also actually serve the valid requests: its ``served`` count moves.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from pydantic import ValidationError

from bench.floor_app import with_floor
from gateway.api.app import create_app
from gateway.api.deps import get_gateway
from gateway.api.fastpath import FastRoutes
from gateway.api.models import SqlRequest
from gateway.auth import new_token
from gateway.observability import metrics
from gateway.settings import BackpressureSettings, RateLimit, ServerSettings
from gateway.store import api_keys
from tests.api.conftest import demo_settings
from tests.auth.conftest import auth_settings, store_dsn  # noqa: F401 - a fixture, used by name

SQL = "SELECT category_id, name FROM categories ORDER BY category_id LIMIT 3"
HEADERS = ("content-type", "content-length", "retry-after", "connection", "x-request-id", "x-correlation-id", "allow")


def _with_test_routes(app: FastAPI) -> FastAPI:
    @app.post("/test/boom", include_in_schema=False)
    async def boom(body: SqlRequest) -> dict[str, str]:
        raise RuntimeError("a bug")

    @app.post("/test/model", include_in_schema=False, status_code=201)
    async def model(body: SqlRequest) -> SqlRequest:
        return body  # rendered through the response model, as FastAPI renders it

    return with_floor(app)


@pytest.fixture(scope="module")
async def app(demo_dsn: str) -> AsyncIterator[FastAPI]:
    settings = demo_settings(demo_dsn, max_rows=500)
    settings.server = ServerSettings(max_body_bytes=4096)
    app = _with_test_routes(create_app(settings))
    async with app.router.lifespan_context(app):
        yield app


def _answer(response: httpx.Response) -> tuple[int, dict[str, str], Any]:
    headers = {k: response.headers[k] for k in HEADERS if k in response.headers}
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    # Every request gets a fresh id (the client's X-Request-Id is only echoed as X-Correlation-Id): the body
    # names the same id as the header, and both compare as a placeholder (ids have one length).
    if "x-request-id" in headers:
        if isinstance(body, dict) and "request_id" in body:
            assert body["request_id"] == headers["x-request-id"]
            body["request_id"] = "<request id>"
        headers["x-request-id"] = "<request id>"
    if isinstance(body, dict) and body.pop("timings", None) is not None:
        headers.pop("content-length")  # the timings' digits vary
    if isinstance(body, dict) and body.pop("retry_after_s", None) is not None:  # the clock moved between the two
        body["detail"] = re.sub(r"after [\d.]+ s", "after N s", body["detail"])
        headers.pop("content-length", None)  # so did the wait's digits
    if "retry-after" in headers:  # whole seconds, rounded up from a wait that shrinks between the two requests
        assert int(headers["retry-after"]) >= 1, headers
        headers["retry-after"] = "<seconds>"
        if isinstance(body, dict) and isinstance(body.get("detail"), str):  # a paused connect names its wait too
            detail = re.sub(r"for [\d.]+ s more", "for N s more", body["detail"])
            if detail != body["detail"]:
                body["detail"] = detail
                headers.pop("content-length", None)
    return response.status_code, headers, body


async def _both(app: FastAPI, method: str, path: str, *, content: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[Any, int]:
    """The answer (the same on both paths, asserted) and how many requests the compiled path served."""
    fast: FastRoutes = app.state.fast_routes
    answers = []
    served = 0
    for enabled in (True, False):
        fast.enabled = enabled
        before = fast.served
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
            response = await http.request(method, path, content=content,
                                          headers={"x-request-id": "fastpath-test", **(headers or {})})
        served += fast.served - before
        answers.append(_answer(response))
    fast.enabled = True
    assert answers[0] == answers[1]
    return answers[0], served


JSON = {"content-type": "application/json"}


def _body(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


CASES: list[tuple[str, str, bytes | None, dict[str, str], int, bool]] = [
    # path, name, body, headers, status, served by the compiled path
    ("/v1/sql", "valid", _body(database="demo", sql=SQL), JSON, 200, True),
    ("/v1/sql", "max_rows", _body(database="demo", sql=SQL, max_rows=2), JSON, 200, True),
    ("/v1/sql", "lax int", _body(database="demo", sql=SQL, max_rows="2"), JSON, 200, True),
    ("/v1/sql", "unknown database", _body(database="nope", sql=SQL), JSON, 404, True),
    ("/v1/sql", "blocked", _body(database="demo", sql="DELETE FROM categories"), JSON, 422, True),
    ("/v1/sql", "query error", _body(database="demo", sql="SELECT nope FROM categories"), JSON, 422, True),
    ("/v1/sql", "database down", _body(database="down", sql=SQL), JSON, 503, True),
    ("/v1/sql", "invalid json", b'{"database": "demo", "sql": ', JSON, 400, False),
    ("/v1/sql", "not an object", b'[1, 2]', JSON, 422, False),
    ("/v1/sql", "wrong type", _body(database="demo", sql=SQL, max_rows="many"), JSON, 422, False),
    ("/v1/sql", "zero rows", _body(database="demo", sql=SQL, max_rows=0), JSON, 422, False),
    ("/v1/sql", "missing field", _body(database="demo"), JSON, 422, False),
    ("/v1/sql", "unknown field", _body(database="demo", sql=SQL, limit=3), JSON, 422, False),
    ("/v1/sql", "NUL", _body(database="demo", sql="SELECT 1\x00"), JSON, 422, False),
    ("/v1/sql", "lone surrogate", b'{"database": "demo", "sql": "SELECT \'\\ud800\'"}', JSON, 422, False),
    ("/v1/sql", "BOM", b"\xef\xbb\xbf" + _body(database="demo", sql=SQL), JSON, 200, False),
    ("/v1/sql", "invalid UTF-8", b'{"database": "demo", "sql": "\xff"}', JSON, 400, False),
    ("/v1/sql", "empty body", b"", JSON, 422, False),
    ("/v1/sql", "oversize", _body(database="demo", sql="SELECT 1 " + " " * 5000), JSON, 413, False),
    ("/v1/sql", "text/plain", _body(database="demo", sql=SQL), {"content-type": "text/plain"}, 415, False),
    ("/v1/sql", "charset", _body(database="demo", sql=SQL), {"content-type": "application/json; charset=utf-8"},
     200, False),
    ("/v1/sql", "+json", _body(database="demo", sql=SQL), {"content-type": "application/vnd.x+json"}, 200, False),
    ("/v1/sql", "no content type", _body(database="demo", sql=SQL), {}, 422, False),
    ("/v1/sql", "not loopback", _body(database="demo", sql=SQL), {**JSON, "host": "evil.example"}, 403, False),
    ("/bench/floor", "valid", _body(database="demo", sql="x"), JSON, 200, True),
    ("/bench/floor", "wrong type", _body(database=1, sql="x"), JSON, 422, False),
    ("/test/model", "response model", _body(database="demo", sql="x", max_rows=3), JSON, 201, True),
    ("/test/boom", "a bug", _body(database="demo", sql="x"), JSON, 500, True),
]


@pytest.mark.parametrize(("path", "name", "content", "headers", "status", "served"), CASES,
                         ids=[f"{c[0]} {c[1]}" for c in CASES])
async def test_the_compiled_path_answers_as_fastapi_does(app: FastAPI, path: str, name: str, content: bytes | None,
                                                         headers: dict[str, str], status: int, served: bool) -> None:
    await _both(app, "POST", path, content=_body(database="demo", sql=SQL), headers=JSON)  # learn the route
    (answer_status, _, body), count = await _both(app, "POST", path, content=content, headers=headers)
    assert answer_status == status, body
    assert count == (1 if served else 0)


async def test_the_route_template_reaches_logs_and_metrics(app: FastAPI) -> None:
    await _both(app, "POST", "/bench/floor", content=_body(database="demo", sql="x"), headers=JSON)
    counter = metrics.REQUESTS.labels("/bench/floor", "200")
    before = counter._value.get()
    (status, _, _), served = await _both(app, "POST", "/bench/floor", content=_body(database="demo", sql="x"),
                                         headers=JSON)
    assert (status, served) == (200, 1)
    assert counter._value.get() == before + 2


async def test_dependency_overrides_send_requests_to_fastapi(app: FastAPI) -> None:
    await _both(app, "POST", "/v1/sql", content=_body(database="demo", sql=SQL), headers=JSON)

    async def no_gateway() -> None:
        raise RuntimeError("overridden")

    app.dependency_overrides[get_gateway] = no_gateway
    try:
        (status, _, _), served = await _both(app, "POST", "/v1/sql", content=_body(database="demo", sql=SQL),
                                             headers=JSON)
    finally:
        app.dependency_overrides.clear()
    assert (status, served) == (500, 0)


async def test_a_route_added_later_is_learned(app: FastAPI) -> None:
    await _both(app, "POST", "/bench/floor", content=_body(database="demo", sql="x"), headers=JSON)

    @app.post("/test/later", include_in_schema=False)
    async def later(body: SqlRequest) -> dict[str, str]:
        return {"sql": body.sql}

    try:
        for expected in (0, 1):
            (status, _, body), served = await _both(app, "POST", "/test/later",
                                                    content=_body(database="demo", sql="x"), headers=JSON)
            assert (status, body, served) == (200, {"sql": "x"}, expected)
    finally:
        app.router.routes.pop()


# Dependencies that refuse: the role check, a key's databases, the per-key rate limit.


@pytest.fixture(scope="module")
async def auth_app(demo_dsn: str, store_dsn: str, tmp_path_factory: pytest.TempPathFactory,  # noqa: F811
                   ) -> AsyncIterator[FastAPI]:
    settings = auth_settings(demo_dsn, store_dsn, Path(tmp_path_factory.mktemp("fastpath")))
    settings.backpressure = BackpressureSettings(roles={"client": RateLimit(rate_per_s=0.001, burst=2)})
    app = _with_test_routes(create_app(settings))
    async with app.router.lifespan_context(app):
        yield app


async def _key(app: FastAPI, role: str, databases: tuple[str, ...] = ("*",)) -> str:
    token = new_token()
    await api_keys.create(app.state.gateway.store.pool, key_id=token.key_id, name=f"fastpath-{token.key_id}",
                          role=role, databases=list(databases), pg_role=None, secret_sha256=token.secret_sha256)
    return token.token


async def _send(app: FastAPI, enabled: bool, token: str | None, content: bytes) -> tuple[Any, int]:
    fast: FastRoutes = app.state.fast_routes
    fast.enabled = enabled
    before = fast.served
    headers = {**JSON, "x-request-id": "fastpath-auth"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        response = await http.post("/v1/sql", content=content, headers=headers)
    fast.enabled = True
    return _answer(response), fast.served - before


async def test_refusals_by_dependencies_are_the_same(auth_app: FastAPI) -> None:
    valid = _body(database="demo", sql=SQL)
    admin = await _key(auth_app, "admin")
    assert (await _send(auth_app, False, admin, valid))[0][0] == 200  # FastAPI serves it: the route is learned
    cases = [
        ("missing key", None, valid),
        ("bad key", "nl2sql_notakey_000000000000000000000000", valid),
        ("other databases", await _key(auth_app, "client", ("elsewhere",)), valid),
    ]
    for name, token, content in cases:
        fast, _ = await _send(auth_app, True, token, content)
        slow, _ = await _send(auth_app, False, token, content)
        assert fast == slow, name
        assert fast[0] in (401, 403), (name, fast)
    # The rate limit: a fresh key per path, the same history; burst 2, then 429 with Retry-After.
    keys = {enabled: await _key(auth_app, "client") for enabled in (True, False)}
    for attempt in range(3):
        fast, served = await _send(auth_app, True, keys[True], valid)
        slow, _ = await _send(auth_app, False, keys[False], valid)
        assert fast == slow, attempt
        assert (fast[0], served) == ((200, 1) if attempt < 2 else (429, 1)), fast


# The compiled path validates from bytes; FastAPI parses with json.loads, then validates. A body the compiled
# path accepts must be one FastAPI accepts as the same value (what it refuses goes to FastAPI anyway).

_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
_bodies = st.fixed_dictionaries(
    {"database": _scalars, "sql": _scalars},
    optional={"max_rows": _scalars, "extra": _scalars},
)


@hypothesis_settings(max_examples=300, deadline=None)
@given(body=_bodies, ascii_only=st.booleans(), cut=st.integers(min_value=0, max_value=3), junk=st.binary(max_size=3))
def test_what_the_compiled_path_accepts_fastapi_accepts_alike(body: dict[str, Any], ascii_only: bool, cut: int,
                                                              junk: bytes) -> None:
    text = json.dumps(body, ensure_ascii=ascii_only).encode()
    for content in (text, text[:len(text) - cut] + junk):
        try:
            fast = SqlRequest.model_validate_json(content)
        except ValidationError:
            continue
        assert SqlRequest.model_validate(json.loads(content)) == fast
