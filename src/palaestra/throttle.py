"""Guessing made slow: failed authentications are limited per client address.

A wrong bearer token, agent key or claim code (the API's and the web forms') counts
one failure for the address it came from. Past ``limit`` failures within
``window_s`` seconds (a moving window), the address is answered 429 with
``Retry-After`` on every credentialed attempt until the oldest failure leaves the
window, right credentials included. A credential that names what it opens (a
fighter's claim code, an agent's key) is also limited per target, across all
addresses, with a larger ``target_limit``: guessing spread over many addresses
is bounded too, at the price that such a guesser can make the rightful owner
wait out the window. The counts live in memory (one process, the
embedded mode) or, given a ``redis://`` URL, in Redis, so that the limit holds
across every API process. The limiter is the ``limits`` library's.

The client address is the connection's peer, unless that peer is a trusted proxy
(``forwarded_allow``): then it is the nearest address of ``X-Forwarded-For`` that is
not a trusted proxy itself.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Sequence
from typing import Any, Final, NoReturn

import structlog
from limits import RateLimitItem, RateLimitItemPerSecond
from limits.aio.storage import MemoryStorage, Storage
from limits.aio.strategies import MovingWindowRateLimiter
from limits.storage import storage_from_string
from redis.asyncio import BlockingConnectionPool, ConnectionPool
from redis.exceptions import RedisError

from palaestra.errors import ConfigurationError, TooManyRequests

__all__ = ["Throttle", "client_address"]

log = structlog.get_logger(__name__)

#: Redis connections one process's throttle keeps at most.
REDIS_CONNECTIONS: Final = 32

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network
_NAMESPACE: Final = "auth-failures"
_TARGETS: Final = "auth-failures-target"


def _networks(ranges: Sequence[str]) -> tuple[_Network, ...]:
    try:
        return tuple(ipaddress.ip_network(r.strip(), strict=False) for r in ranges if r.strip())
    except ValueError as exc:
        raise ConfigurationError(f"PALAESTRA_FORWARDED_ALLOW_IPS: {exc}") from exc


def _trusted(address: str, networks: Sequence[_Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return False
    return any(ip in network for network in networks)


def client_address(peer: str | None, forwarded_for: str | None, trusted: Sequence[_Network]) -> str:
    """The address a request is counted against (see the module's docstring)."""
    address = peer or "unknown"
    if not forwarded_for or not _trusted(address, trusted):
        return address
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        try:
            ipaddress.ip_address(hop.strip("[]"))
        except ValueError:
            return address  # a forged or garbled list: count the proxy's own address
        if not _trusted(hop, trusted):
            return hop.strip("[]")
    return hops[0].strip("[]") if hops else address


def _storage(url: str | None, prefix: str) -> tuple[Storage, ConnectionPool | None]:
    """The limiter's storage, and the Redis connections it uses (ours to close)."""
    if url is None:
        return MemoryStorage(), None
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("redis", "rediss", "memory"):
        raise ConfigurationError("PALAESTRA_AUTH_THROTTLE_URL: expected redis://... or memory://")
    uri = f"async+{scheme}://{rest}"
    pool = None
    if scheme == "memory":
        storage = storage_from_string(uri)
    else:
        # Bounded, and a burst of requests waits for a connection rather than failing.
        pool = BlockingConnectionPool.from_url(url, max_connections=REDIS_CONNECTIONS, timeout=10)
        # The pool is passed on to redis-py (limits types its options as scalars only).
        options: dict[str, Any] = {"connection_pool": pool}
        storage = storage_from_string(uri, implementation="redispy", key_prefix=prefix, **options)
    assert isinstance(storage, Storage)
    return storage, pool


class Throttle:
    """Failed authentications per client address, and per target (one fighter's claim code,
    one agent's key) across all addresses; a limit of 0 turns its part off."""

    def __init__(
        self,
        *,
        limit: int,
        window_s: int,
        target_limit: int = 0,
        storage_url: str | None = None,
        forwarded_allow: Sequence[str] = (),
        prefix: str = "palaestra",
    ) -> None:
        self.limit = limit
        self.trusted = _networks(forwarded_allow)
        self.target_limit = target_limit
        self._item = RateLimitItemPerSecond(max(limit, 1), window_s)
        self._target_item = RateLimitItemPerSecond(max(target_limit, 1), window_s)
        self._storage, self._pool = _storage(storage_url, prefix)
        self._limiter = MovingWindowRateLimiter(self._storage)

    def address_of(self, peer: str | None, forwarded_for: str | None) -> str:
        return client_address(peer, forwarded_for, self.trusted)

    async def check(self, address: str, target: str | None = None) -> None:
        """Raise :class:`TooManyRequests` while ``address`` (or ``target``) is over its limit.

        When Redis cannot be reached the request is let through (and logged): the
        throttle slows guessing down, it must not take every credentialed request down
        with the store it counts in."""
        try:
            await self._check(address, target)
        except RedisError as exc:
            log.warning("the guessing throttle cannot reach Redis", error=type(exc).__name__)

    async def _check(self, address: str, target: str | None) -> None:
        if self.limit and not await self._limiter.test(self._item, _NAMESPACE, address):
            await self._refuse(self._item, address, "from this address")
        if (
            target is not None
            and self.target_limit
            and not await self._limiter.test(self._target_item, _TARGETS, target)
        ):
            await self._refuse(self._target_item, target, "for this credential")

    async def _refuse(self, item: RateLimitItem, key: str, where: str) -> NoReturn:
        namespace = _NAMESPACE if item is self._item else _TARGETS
        stats = await self._limiter.get_window_stats(item, namespace, key)
        raise TooManyRequests(
            f"Too many failed authentications {where}; try again later",
            # The limiter keeps wall-clock times of its own, so the wait is measured by them.
            retry_after=stats.reset_time - time.time(),
        )

    async def failed(self, address: str, target: str | None = None) -> None:
        """Count one failed authentication from ``address`` (against ``target``, if named)."""
        try:
            await self._failed(address, target)
        except RedisError as exc:
            log.warning("the guessing throttle cannot reach Redis", error=type(exc).__name__)

    async def _failed(self, address: str, target: str | None) -> None:
        if self.limit:
            await self._limiter.hit(self._item, _NAMESPACE, address)
        if target is not None and self.target_limit:
            await self._limiter.hit(self._target_item, _TARGETS, target)

    async def close(self) -> None:
        """Close the Redis connections, if any (they reopen on the next use)."""
        if self._pool is not None:
            await self._pool.disconnect()
