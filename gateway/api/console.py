"""``/console``: the web console's static files, from the package (no CDN, no build step).

Like ``/docs``, the page and its assets sit outside the API's dependencies: they need no key (the console
signs in with one and sends it on every API call) and hold no data. Every answer carries a strict content
security policy, scoped to ``/console`` (Swagger UI at ``/docs`` needs other allowances): scripts, styles,
images and API calls from this origin only, no inline code, no framing. Assets are revalidated by ETag
(``Cache-Control: no-cache``), so a new release is picked up at once and an unchanged file costs a 304.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import RedirectResponse
from starlette.staticfiles import StaticFiles
from starlette.types import Message, Receive, Scope, Send

from gateway.console import STATIC

PREFIX = "/console"
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = [
    (b"content-security-policy", CSP.encode()),
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

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if suffix in MEDIA_TYPES and message["status"] == 200:
                    # ES modules need a JavaScript type, whatever the host's mime.types says.
                    headers = [(k, v) for k, v in headers if k.lower() != b"content-type"]
                    headers.append((b"content-type", MEDIA_TYPES[suffix]))
                message["headers"] = [*headers, *HEADERS]
            await send(message)

        await self.files(scope, receive, with_headers)


def install(app: FastAPI) -> None:
    """Serve the console at ``/console/`` (``/console`` redirects there, so relative asset paths resolve)."""

    async def to_slash(request: Request) -> RedirectResponse:
        return RedirectResponse("console/", status_code=308)  # relative: right behind a proxy's root_path too

    app.add_route(PREFIX, to_slash, include_in_schema=False)
    app.mount(PREFIX, _Assets(), name="console")
