"""Request dependencies: the platform and the authenticated caller."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import Depends, Header, Request

from palaestra.engine.accounts import Caller, authenticate
from palaestra.errors import Forbidden, InvalidClaimCode, InvalidCredential
from palaestra.platform import Platform
from palaestra.throttle import Throttle

__all__ = [
    "AdminCaller",
    "AnyCaller",
    "PlatformDep",
    "caller_of",
    "get_platform",
    "guarded",
]


async def get_platform(request: Request) -> Platform:
    # async: FastAPI runs a plain ``def`` dependency on a worker thread, a hop per request.
    platform: Platform = request.app.state.platform
    return platform


PlatformDep = Annotated[Platform, Depends(get_platform)]


async def caller_of(platform: Platform, authorization: str | None) -> Caller:
    """The caller an ``Authorization: Bearer`` header stands for, or :class:`Unauthorized`."""
    token = None
    if authorization and authorization[:7].lower() == "bearer ":
        token = authorization[7:].strip()
    return await authenticate(platform, token)


@asynccontextmanager
async def guarded(request: Request, target: str | None = None) -> AsyncIterator[None]:
    """Check a credential inside the block under the guessing throttle.

    While the client's address is over the limit, :class:`~palaestra.errors.TooManyRequests`
    is raised before the block runs, and the block waits while as many credentials are
    being checked as failures are left (see ``Throttle.attempt``); a wrong bearer token,
    agent key or claim code raised inside it counts one failure against the address, and
    against ``target`` when named (the fighter or agent the credential would open).
    """
    throttle: Throttle | None = getattr(request.app.state, "throttle", None)
    if throttle is None:
        yield
        return
    peer = request.client.host if request.client else None
    address = throttle.address_of(peer, request.headers.get("x-forwarded-for"))
    async with throttle.attempt(address, target) as attempt:
        try:
            yield
        except (InvalidCredential, InvalidClaimCode):
            await attempt.failed()
            raise


async def _caller(
    request: Request, platform: PlatformDep, authorization: Annotated[str | None, Header()] = None
) -> Caller:
    async with guarded(request):
        return await caller_of(platform, authorization)


async def _admin(caller: Annotated[Caller, Depends(_caller)]) -> Caller:
    if not caller.is_admin:
        raise Forbidden("admin token required")
    return caller


AnyCaller = Annotated[Caller, Depends(_caller)]
AdminCaller = Annotated[Caller, Depends(_admin)]
