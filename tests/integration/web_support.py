"""Helpers for the web pages' tests: fetch a page and post a form as a browser would, and keep
the arena still."""

from __future__ import annotations

from typing import Any

from palaestra.platform import Platform
from tests.integration.platform_fixtures import Api

__all__ = ["HOSTILE", "HTML", "page", "post_form", "still"]

HTML = {"Accept": "text/html"}
#: Agent-controlled text that must reach a page escaped.
HOSTILE = '<script>alert("pwned")</script>'


async def page(api: Api, path: str, **kwargs: Any) -> tuple[int, str]:
    headers = {**HTML, **kwargs.pop("headers", {})}
    async with api.session.get(api.base + path, headers=headers, **kwargs) as response:
        return response.status, await response.text()


async def post_form(
    api: Api, path: str, form: dict[str, str], headers: dict[str, str] | None = None
) -> tuple[int, str, Any]:
    """Post ``form`` from the arena's own pages; the redirect, if any, is not followed."""
    async with api.session.post(
        api.base + path,
        data=form,
        headers={**HTML, "Origin": api.base, **(headers or {})},
        allow_redirects=False,
    ) as response:
        return response.status, await response.text(), response.headers


def still(platform: Platform) -> Platform:
    """No referee, run driver or ratings worker: rows written by a test stay as written."""
    platform.settings.referee_enabled = False
    platform.settings.runs_enabled = False
    platform.settings.ratings_enabled = False
    return platform
