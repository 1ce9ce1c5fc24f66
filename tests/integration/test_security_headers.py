"""The security headers on every kind of response, and API docs that load nothing from outside."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import aiohttp
import pytest

from palaestra.app import create_app
from palaestra.platform import Platform
from tests.integration.platform_fixtures import Api, running, serve_app
from tests.integration.web_support import HTML

COMMON = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
}


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    """Headers do not depend on the store: SQLite only."""
    return f"sqlite+aiosqlite:///{tmp_path / 'palaestra.db'}"


async def fetch(
    api: Api, method: str, path: str, **kwargs: object
) -> tuple[int, dict[str, str], bytes]:
    async with api.session.request(method, api.base + path, **kwargs) as response:  # type: ignore[arg-type]
        headers = {name.lower(): value for name, value in response.headers.items()}
        return response.status, headers, await response.read()


def policy(headers: dict[str, str]) -> dict[str, str]:
    """A Content-Security-Policy as {directive: sources}."""
    parts = (part.strip().split(" ", 1) for part in headers["content-security-policy"].split(";"))
    return {part[0]: part[1] if len(part) > 1 else "" for part in parts if part[0]}


def assert_common(headers: dict[str, str]) -> None:
    for name, value in COMMON.items():
        assert headers.get(name) == value, (name, headers)
    assert "strict-transport-security" not in headers  # the public URL is http here
    assert policy(headers)["frame-ancestors"] == "'none'"


@pytest.mark.parametrize(
    ("method", "path", "headers", "status", "html"),
    [
        ("GET", "/", HTML, 200, True),
        ("GET", "/matches", HTML, 200, True),
        ("GET", "/register", HTML, 200, True),
        ("GET", "/no-such-page", HTML, 404, True),
        ("GET", "/api/matches", {}, 200, False),
        ("GET", "/api/agents", {}, 401, False),
        ("GET", "/api/no-such-route", {}, 404, False),
        ("GET", "/openapi.json", {}, 200, False),
        ("GET", "/healthz", {}, 200, False),
        ("GET", "/metrics", {}, 200, False),
        ("GET", "/static/style.css", {}, 200, False),
        ("GET", "/static/htmx.min.js", {}, 200, False),
        ("GET", "/static/no-such-file.js", {}, 404, False),
        ("DELETE", "/api/matches", {}, 405, False),
    ],
)
async def test_every_kind_of_response_carries_the_headers(
    platform: Platform, method: str, path: str, headers: dict[str, str], status: int, html: bool
) -> None:
    async with running(platform) as api:
        got, sent, _ = await fetch(api, method, path, headers=headers)
    assert got == status
    assert_common(sent)
    csp = policy(sent)
    if html:
        # The pages run our own scripts only: nothing inline, nothing from elsewhere.
        assert csp["script-src"] == "'self'"
        assert csp["style-src"] == "'self'"
        assert csp["form-action"] == "'self'"
        assert "unsafe-inline" not in sent["content-security-policy"]
    else:
        assert csp["default-src"] == "'none'"


async def test_a_body_over_the_cap_is_refused_with_the_headers(platform: Platform) -> None:
    async with running(platform) as api:
        declared = {"Content-Length": str(platform.settings.max_body_bytes + 1)}
        status, headers, _ = await fetch(
            api, "POST", "/api/owners", data=b"{}", headers=declared, skip_auto_headers=()
        )
    assert status == 413
    assert_common(headers)


async def test_hsts_only_when_the_public_url_is_https(platform: Platform) -> None:
    platform.settings.public_url = "https://arena.example"
    async with (
        serve_app(create_app(platform=platform)) as base,
        aiohttp.ClientSession() as session,
    ):
        status, headers, _ = await fetch(Api(base, session), "GET", "/api/matches")
    assert status == 200
    assert headers["strict-transport-security"].startswith("max-age=31536000")


def sha256_source(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    return f"'sha256-{digest}'"


async def test_swagger_ui_loads_its_assets_from_the_package_and_its_one_script_by_hash(
    platform: Platform,
) -> None:
    async with running(platform) as api:
        status, headers, body = await fetch(api, "GET", "/docs")
        page = body.decode()
        assets = re.findall(r'(?:src|href)="([^"]+)"', page)
        fetched = [await fetch(api, "GET", asset) for asset in assets]
    assert status == 200
    assert_common(headers)
    assert "cdn" not in page
    assert "https://" not in page
    assert "http://" not in page
    assert sorted(assets) == [
        "/static/docs/swagger-ui-bundle.js",
        "/static/docs/swagger-ui.css",
        "/static/favicon.svg",
    ]
    for asset, (got, _, content) in zip(assets, fetched, strict=True):
        assert (got, len(content) > 100) == (200, True), asset
    inline = re.findall(r"<script>(.*?)</script>", page, re.DOTALL)
    assert len(inline) == 1
    assert "SwaggerUIBundle(" in inline[0]
    scripts = policy(headers)["script-src"].split()
    assert scripts == ["'self'", sha256_source(inline[0])]
    assert "unsafe-eval" not in headers["content-security-policy"]


async def test_redoc_loads_its_bundle_from_the_package(platform: Platform) -> None:
    async with running(platform) as api:
        status, headers, body = await fetch(api, "GET", "/redoc")
        page = body.decode()
        bundle = await fetch(api, "GET", "/static/docs/redoc.standalone.js")
    assert status == 200
    assert_common(headers)
    assert "https://" not in page
    assert "http://" not in page
    assert '<script src="/static/docs/redoc.standalone.js">' in page
    assert bundle[0] == 200
    assert len(bundle[2]) > 100_000
    assert policy(headers)["script-src"] == "'self'"


async def test_an_internal_error_carries_the_headers(platform: Platform) -> None:
    app = create_app(platform=platform)

    async def broken() -> None:
        raise RuntimeError("a bug")

    app.add_api_route("/api/broken", broken)
    async with serve_app(app) as base, aiohttp.ClientSession() as session:
        status, headers, body = await fetch(Api(base, session), "GET", "/api/broken")
    assert status == 500
    assert body == b'{"error":"Internal error","code":"internal"}'
    assert_common(headers)
    assert policy(headers)["default-src"] == "'none'"
