"""Resolving under the policy: every address a host name gives is judged before any is used.

:class:`PolicyResolver` is the egress client's resolver, so that a
connection is only ever made to a checked address; :func:`resolve_checked`
does the same for a URL without sending anything.
"""

from __future__ import annotations

import contextvars
import socket

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

from palaestra.errors import EgressRefused
from palaestra.protocol.hostnames import host_name_problem

from .policy import Address, EgressPolicy

__all__ = ["PolicyResolver", "plain_http", "resolve_checked"]

#: Whether the call being connected is plain http: set by the egress client around each
#: call, read by :class:`PolicyResolver` (the policy allows plain http to fewer addresses).
plain_http: contextvars.ContextVar[bool] = contextvars.ContextVar("plain_http", default=False)


class PolicyResolver(AbstractResolver):
    """Resolves with ``inner`` and lets through only addresses the policy allows.

    One refused address refuses the whole host: a name that points at both a
    public and a private address is not an endpoint Palaestra calls. A name the
    DNS could not look up (an empty label, one over 63 characters) is refused
    before it is asked for, so the resolver never raises the ``UnicodeError`` of
    Python's ``idna`` codec: whatever host it is handed, it answers or refuses.
    """

    def __init__(self, policy: EgressPolicy, inner: AbstractResolver | None = None) -> None:
        self.policy = policy
        self._inner = inner or ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        answers = await _resolve(self._inner, host, port, family)
        if not answers:
            raise OSError(f"{host} has no addresses")
        is_plain = plain_http.get()
        for answer in answers:
            self.policy.check_resolved(host, answer["host"], plain_http=is_plain)
        return answers

    async def close(self) -> None:
        await self._inner.close()


async def resolve_checked(
    policy: EgressPolicy, url: str, resolver: AbstractResolver | None = None
) -> list[Address]:
    """The addresses Palaestra would connect to for ``url``, or :class:`EgressRefused` (whose
    ``exact_message`` names a refused address the name resolved to)."""
    target = policy.target(url)
    literal = policy.check_url(target)
    if literal is not None:
        return [literal]
    host = target.raw_host or ""
    inner = resolver or ThreadedResolver()
    try:
        answers = await _resolve(inner, host, target.port or 0, socket.AF_UNSPEC)
    except OSError as exc:
        raise EgressRefused(f"{host} does not resolve: {exc.strerror or exc}") from exc
    finally:
        if resolver is None:
            await inner.close()
    is_plain = target.scheme == "http"
    checked = (
        policy.check_resolved(host, answer["host"], plain_http=is_plain) for answer in answers
    )
    return list(dict.fromkeys(checked))


async def _resolve(
    inner: AbstractResolver, host: str, port: int, family: socket.AddressFamily
) -> list[ResolveResult]:
    """``inner``'s answers for ``host``; :class:`EgressRefused` for a name it cannot look up."""
    problem = host_name_problem(host)
    if problem is not None:
        raise EgressRefused(f"invalid host name {host!r}: {problem}")
    try:
        return await inner.resolve(host, port, family)
    except UnicodeError as exc:  # the idna codec refusing what the check above let through
        raise EgressRefused(f"invalid host name {host!r}: {exc}") from exc
