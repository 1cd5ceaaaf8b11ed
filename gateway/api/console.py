"""``/console``: the web console's static files, from the package (no CDN, no build step).

Like ``/docs``, the page and its assets sit outside the API's dependencies: they need no key (the console
signs in with one and sends it on every API call) and hold no data. Every answer carries a strict content
security policy, scoped to ``/console`` (Swagger UI at ``/docs`` needs other allowances): scripts, styles,
images and API calls from this origin only, no inline code, no framing. Assets are revalidated by ETag
(``Cache-Control: no-cache``), so a new release is picked up at once and an unchanged file costs a 304.

``GET /console/config.json`` (public, see gateway.auth.access) tells the page how to sign in: with an API key
always, and with the identity provider when ``auth.oidc.console_client_id`` is set (gateway.auth.signin: the
client id, scopes and the authorization server's endpoints). The page then posts the authorization code to
the token endpoint itself, so that endpoint's origin (and the revocation endpoint's) is added to the page's
``connect-src``, computed here from the settings and the server's metadata, never from the request.
"""

from __future__ import annotations

from collections.abc import Iterable

from fastapi import Depends, FastAPI
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse
from starlette.staticfiles import StaticFiles
from starlette.types import Message, Receive, Scope, Send

from gateway import errors
from gateway.auth import Principal
from gateway.auth.access import authorize
from gateway.console import STATIC
from gateway.observability.logging import get_logger
from gateway.service import Gateway

log = get_logger(__name__)

PREFIX = "/console"
CONFIG = PREFIX + "/config.json"


def csp(connect: Iterable[str] = ()) -> str:
    """The console's content security policy; ``connect`` adds origins the page may ``fetch`` from."""
    sources = " ".join(["'self'", *connect])
    return ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
            f"connect-src {sources}; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'")


CSP = csp()  # without sign-in at an identity provider: nothing but this origin
HEADERS = [
    (b"cache-control", b"no-cache"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]
MEDIA_TYPES = {".js": b"text/javascript; charset=utf-8", ".css": b"text/css; charset=utf-8",
               ".html": b"text/html; charset=utf-8", ".svg": b"image/svg+xml"}


def is_console(path: str) -> bool:
    """True for the console's page and assets (public: the middleware asks no key for them)."""
    return path == PREFIX or path.startswith(PREFIX + "/")


class _Assets:
    """StaticFiles (ETag, Last-Modified, 304s) with the console's headers on every answer."""

    path = PREFIX  # the endpoint label of request metrics and access logs (not "unmatched")

    def __init__(self) -> None:
        self.files = StaticFiles(directory=STATIC, html=True)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["route"] = self
        path = scope.get("path", "")
        suffix = "." + path.rsplit(".", 1)[-1] if "." in path.rsplit("/", 1)[-1] else ".html"
        # Only a document's policy governs what its scripts fetch: the page asks the metadata, assets need not.
        policy = await _policy(scope) if suffix == ".html" else CSP

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if suffix in MEDIA_TYPES and message["status"] == 200:
                    # ES modules need a JavaScript type, whatever the host's mime.types says.
                    headers = [(k, v) for k, v in headers if k.lower() != b"content-type"]
                    headers.append((b"content-type", MEDIA_TYPES[suffix]))
                message["headers"] = [*headers, (b"content-security-policy", policy.encode()), *HEADERS]
            await send(message)

        await self.files(scope, receive, with_headers)


async def _policy(scope: Scope) -> str:
    """The page's policy: :data:`CSP` plus the identity provider's token and revocation origins when the
    console signs in there. While its metadata is unknown the page cannot sign in there anyway: plain CSP."""
    app = scope.get("app")
    gateway = getattr(getattr(app, "state", None), "service", None)  # none before the gateway opened
    try:
        sign_in = await gateway.console_sign_in() if gateway is not None else None
    except errors.GatewayError:
        return CSP
    return csp(sign_in.connect_origins) if sign_in is not None else CSP


async def config(request: Request, _: Principal = Depends(authorize)) -> JSONResponse:
    """How the console signs in: ``oidc`` (client id, scopes, endpoints) or null for API keys only."""
    gateway: Gateway = request.app.state.service
    try:
        sign_in = await gateway.console_sign_in()
    except errors.IdentityProviderUnavailable as exc:
        # The page still offers API keys; it says why sign-in with the identity provider is not offered.
        log.warning("console_sign_in_unavailable", detail=exc.detail)
        return JSONResponse({"auth_enabled": True, "api_key": True, "oidc": None, "oidc_error": exc.detail},
                            headers={"cache-control": "no-store"})
    enabled = gateway.auth_enabled()
    return JSONResponse({"auth_enabled": enabled, "api_key": enabled,
                         "oidc": sign_in.public() if sign_in is not None else None, "oidc_error": None},
                        headers={"cache-control": "no-store"})


def install(app: FastAPI) -> None:
    """Serve the console at ``/console/`` (``/console`` redirects there, so relative asset paths resolve)."""

    async def to_slash(request: Request) -> RedirectResponse:
        return RedirectResponse("console/", status_code=308)  # relative: right behind a proxy's root_path too

    app.add_route(PREFIX, to_slash, include_in_schema=False)
    # Before the mount, which would otherwise serve (and 404) every path under /console.
    app.add_api_route(CONFIG, config, methods=["GET"], include_in_schema=False)
    app.mount(PREFIX, _Assets(), name="console")
