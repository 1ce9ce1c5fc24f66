"""A browser of its own for the web tests: its cookies, the pages' hidden fields, signing in."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any

import aiohttp

from palaestra.engine.accounts import authenticate
from palaestra.platform import Platform
from tests.integration.platform_fixtures import Api
from tests.integration.web_support import HTML

__all__ = ["COOKIE", "Browser", "browser", "hidden", "owner_of", "set_cookie"]

COOKIE = "palaestra_session"


@dataclass
class Browser:
    """A browser of its own (its own cookies) on the arena's pages."""

    base: str
    session: aiohttp.ClientSession

    async def get(self, path: str) -> tuple[int, str, Any]:
        async with self.session.get(self.base + path, headers=HTML) as response:
            return response.status, await response.text(), response.headers

    async def post(
        self, path: str, form: dict[str, str], origin: str | None = None
    ) -> tuple[int, str, Any]:
        headers = {**HTML, "Origin": origin or self.base}
        async with self.session.post(
            self.base + path, data=form, headers=headers, allow_redirects=False
        ) as response:
            return response.status, await response.text(), response.headers

    async def sign_in(self, token: str, then: str = "") -> tuple[int, str, Any]:
        _, page, _ = await self.get("/signin")
        form = {"token": token, "csrf_token": hidden(page.split('id="signin"')[1], "csrf_token")}
        if then:
            form["then"] = then
        return await self.post("/signin", form)

    def cookie(self, name: str = COOKIE) -> str | None:
        for morsel in self.session.cookie_jar:
            if morsel.key == name:
                return morsel.value
        return None


@asynccontextmanager
async def browser(api: Api) -> AsyncIterator[Browser]:
    jar = aiohttp.CookieJar(unsafe=True)  # keeps cookies set by 127.0.0.1
    async with aiohttp.ClientSession(cookie_jar=jar) as session:
        yield Browser(api.base, session)


def hidden(page: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert found is not None, f"no {name} field on the page"
    return found.group(1)


def set_cookie(headers: Any, name: str) -> SimpleCookie:
    cookies: SimpleCookie = SimpleCookie()
    for line in headers.getall("Set-Cookie"):
        if line.startswith(name + "="):
            cookies.load(line)
    assert name in cookies, headers.getall("Set-Cookie")
    return cookies


async def owner_of(platform: Platform, token: str) -> str:
    caller = await authenticate(platform, token)
    assert caller.owner_id is not None
    return caller.owner_id
