"""Request dependencies: the platform and the authenticated caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from palaestra.engine.accounts import Caller, authenticate
from palaestra.errors import Forbidden
from palaestra.platform import Platform

__all__ = ["AdminCaller", "AnyCaller", "PlatformDep", "caller_of", "get_platform"]


def get_platform(request: Request) -> Platform:
    platform: Platform = request.app.state.platform
    return platform


PlatformDep = Annotated[Platform, Depends(get_platform)]


async def caller_of(platform: Platform, authorization: str | None) -> Caller:
    """The caller an ``Authorization: Bearer`` header stands for, or :class:`Unauthorized`."""
    token = None
    if authorization and authorization[:7].lower() == "bearer ":
        token = authorization[7:].strip()
    return await authenticate(platform, token)


async def _caller(
    platform: PlatformDep, authorization: Annotated[str | None, Header()] = None
) -> Caller:
    return await caller_of(platform, authorization)


async def _admin(caller: Annotated[Caller, Depends(_caller)]) -> Caller:
    if not caller.is_admin:
        raise Forbidden("admin token required")
    return caller


AnyCaller = Annotated[Caller, Depends(_caller)]
AdminCaller = Annotated[Caller, Depends(_admin)]
