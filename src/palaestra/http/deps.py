"""Request dependencies: the services of the server's mode, the platform, the caller."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import Depends, Header, Request

from palaestra.engine.accounts import Caller, authenticate
from palaestra.errors import Forbidden, InvalidClaimCode, InvalidCredential
from palaestra.platform import Platform
from palaestra.services import Services

__all__ = [
    "AdminCaller",
    "AnyCaller",
    "PlatformDep",
    "ServicesDep",
    "caller_of",
    "get_platform",
    "get_services",
    "guarded",
    "services_of",
]


def services_of(request: Request) -> Services:
    """The services the application serves with (see ``palaestra.services``): the one
    place that reads them from the application."""
    services: Services = request.app.state.services
    return services


async def get_services(request: Request) -> Services:
    # async: FastAPI runs a plain ``def`` dependency on a worker thread, a hop per request.
    return services_of(request)


ServicesDep = Annotated[Services, Depends(get_services)]


async def get_platform(request: Request) -> Platform:
    # From the request, as ``get_services``: no dependency of a dependency on every request.
    return services_of(request).platform


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
    throttle = services_of(request).throttle
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
