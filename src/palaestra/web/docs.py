"""The API docs, Swagger UI at ``/docs`` and ReDoc at ``/redoc``, from the package's own files.

Nothing is loaded from a CDN: the assets are vendored in ``static/docs`` (swagger-ui-dist
and redoc from the npm registry; see the README there). Each page sends a policy of its
own: Swagger UI starts from one inline script, allowed by its hash and nothing else;
ReDoc styles itself at run time and runs its search in a worker made from a blob.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Final

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from starlette.requests import Request
from starlette.responses import HTMLResponse

__all__ = ["inline_script_hashes", "mount_docs"]

_ASSETS: Final = "/static/docs"
_FAVICON: Final = "/static/favicon.svg"
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


def inline_script_hashes(html: str) -> list[str]:
    """The CSP source expressions (``'sha256-...'``) of a page's inline scripts."""
    return [
        f"'sha256-{base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()}'"
        for body in _INLINE_SCRIPT.findall(html)
    ]


def _swagger_page(openapi_url: str, title: str) -> HTMLResponse:
    page = get_swagger_ui_html(
        openapi_url=openapi_url,
        title=f"{title} - Swagger UI",
        swagger_js_url=f"{_ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{_ASSETS}/swagger-ui.css",
        swagger_favicon_url=_FAVICON,
        # The validator badge would send the document to an outside service.
        swagger_ui_parameters={"validatorUrl": None},
    )
    html = bytes(page.body).decode()
    scripts = " ".join(["'self'", *inline_script_hashes(html)])
    policy = (
        f"default-src 'self'; script-src {scripts}; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; base-uri 'none'; object-src 'none'; "
        "frame-ancestors 'none'"
    )
    return HTMLResponse(html, headers={"Content-Security-Policy": policy})


def _redoc_page(openapi_url: str, title: str) -> HTMLResponse:
    page = get_redoc_html(
        openapi_url=openapi_url,
        title=f"{title} - ReDoc",
        redoc_js_url=f"{_ASSETS}/redoc.standalone.js",
        redoc_favicon_url=_FAVICON,
        with_google_fonts=False,
    )
    policy = (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; "
        "connect-src 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'"
    )
    return HTMLResponse(bytes(page.body), headers={"Content-Security-Policy": policy})


def mount_docs(app: FastAPI) -> None:
    """Serve ``/docs`` and ``/redoc`` (create the app with ``docs_url=None, redoc_url=None``)."""
    openapi_url = app.openapi_url or "/openapi.json"
    swagger = _swagger_page(openapi_url, app.title)
    redoc = _redoc_page(openapi_url, app.title)

    async def docs(_request: Request) -> HTMLResponse:
        return HTMLResponse(bytes(swagger.body), headers=_policy_of(swagger))

    async def redoc_page(_request: Request) -> HTMLResponse:
        return HTMLResponse(bytes(redoc.body), headers=_policy_of(redoc))

    app.add_route("/docs", docs, include_in_schema=False)
    app.add_route("/redoc", redoc_page, include_in_schema=False)


def _policy_of(page: HTMLResponse) -> dict[str, str]:
    return {"Content-Security-Policy": page.headers["content-security-policy"]}
