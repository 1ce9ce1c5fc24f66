"""Resolve a URL's host and judge every address, without sending anything."""

from __future__ import annotations

import socket

from aiohttp.abc import AbstractResolver
from aiohttp.resolver import ThreadedResolver
from yarl import URL

from palaestra.errors import EgressRefused

from .policy import Address, EgressPolicy, parse_address

__all__ = ["resolve_checked"]


async def resolve_checked(
    policy: EgressPolicy, url: str, resolver: AbstractResolver | None = None
) -> list[Address]:
    """The addresses Palaestra would connect to for ``url``, or :class:`EgressRefused`."""
    try:
        target = URL(url)
    except ValueError as exc:
        raise EgressRefused(f"invalid URL: {exc}") from exc
    literal = policy.check_url(target)
    if literal is not None:
        return [literal]
    host = target.raw_host or ""
    inner = resolver or ThreadedResolver()
    try:
        answers = await inner.resolve(host, target.port or 0, socket.AF_UNSPEC)
    except OSError as exc:
        raise EgressRefused(f"{host} does not resolve: {exc.strerror or exc}") from exc
    finally:
        if resolver is None:
            await inner.close()
    addresses = list(dict.fromkeys(parse_address(answer["host"]) for answer in answers))
    for address in addresses:
        policy.check_address(address, plain_http=target.scheme == "http")
    return addresses
