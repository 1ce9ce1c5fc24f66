"""The security headers, on every response: pages, the JSON API, the docs, static files, errors.

A response that already carries a ``Content-Security-Policy`` keeps it (the API docs
send their own, which allows their one inline script by its hash); every other header
is added where the response does not set it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "API_POLICY",
    "PAGE_POLICY",
    "SecurityHeaders",
    "add_headers",
    "security_headers",
]

#: The pages: our own scripts (htmx) and stylesheet only, nothing inline, never framed.
PAGE_POLICY: Final = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; object-src 'none'; "
    "frame-ancestors 'none'"
)
#: Everything that is not a page (JSON, metrics, static files): it may load nothing.
API_POLICY: Final = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"
_HSTS: Final = "max-age=31536000; includeSubDomains"


def security_headers(*, html: bool, https: bool) -> dict[str, str]:
    """The headers for one response: ``html`` for a page, ``https`` to add HSTS."""
    headers = {
        "Content-Security-Policy": PAGE_POLICY if html else API_POLICY,
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "same-origin",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cross-Origin-Resource-Policy": "same-origin",
        "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
    }
    if https:
        headers["Strict-Transport-Security"] = _HSTS
    return headers


def _missing(present: Iterable[bytes], wanted: dict[str, str]) -> list[tuple[bytes, bytes]]:
    have = {name.lower() for name in present}
    return [
        (name.lower().encode(), value.encode())
        for name, value in wanted.items()
        if name.lower().encode() not in have
    ]


class SecurityHeaders:
    """Add :func:`security_headers` to every HTTP response passing through."""

    def __init__(self, app: ASGIApp, *, https: bool) -> None:
        self.app = app
        self.https = https

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                add_headers(message, https=self.https)
            await send(message)

        await self.app(scope, receive, secured)


def add_headers(message: Message, *, https: bool) -> None:
    """Complete the headers of an ``http.response.start`` message in place."""
    raw: list[tuple[bytes, bytes]] = list(message.get("headers", ()))
    content_type = next((value for name, value in raw if name.lower() == b"content-type"), b"")
    wanted = security_headers(html=content_type.startswith(b"text/html"), https=https)
    message["headers"] = raw + _missing((name for name, _ in raw), wanted)
