"""The demo's JSON client for the platform's API, as the admin or as an owner."""

from __future__ import annotations

from typing import Any, Final

import aiohttp

__all__ = ["ADMIN_TOKEN", "Api", "DemoStepFailed"]

#: The demo's fixed admin token: the demo listens on loopback only.
ADMIN_TOKEN: Final = "pa_admin_demo"  # noqa: S105 - printed for the newcomer on purpose


class Api:
    """The demo's JSON client for the platform's API."""

    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session = session
        self.base = base

    async def call(
        self, method: str, path: str, token: str, body: Any = None, *, expect: int = 200
    ) -> Any:
        headers = {"Authorization": f"Bearer {token}"}
        async with self.session.request(
            method, self.base + path, json=body, headers=headers
        ) as response:
            data = await response.json(content_type=None)
            if response.status != expect:
                raise DemoStepFailed(f"{method} {path}: {response.status} {data}")
            return data

    async def owner(self, name: str) -> str:
        created = await self.call("POST", "/api/owners", ADMIN_TOKEN, {"name": name}, expect=201)
        token: str = created["token"]
        return token


class DemoStepFailed(Exception):
    """One step of the demo's set-up was refused."""
