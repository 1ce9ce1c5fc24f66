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

Credentials checked at once are counted as they come: an attempt holds a slot while its
credential is looked up, and no more attempts are let in at once than failures are left
in the window (:meth:`Throttle.attempt`), so a burst of wrong tokens sent together gets
no more answers than the limit, the rest 429; right ones sent together wait for a slot,
never refused. The slots are this process's: scaled out, each API process lets in at most
the remaining failures at once, and the shared count refuses the rest as they land.

The client address is the connection's peer, unless that peer is a trusted proxy
(``forwarded_allow``): then it is the nearest address of ``X-Forwarded-For`` that is
not a trusted proxy itself.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn

import structlog
from limits import RateLimitItem, RateLimitItemPerSecond
from limits.aio.storage import MemoryStorage, Storage
from limits.aio.strategies import MovingWindowRateLimiter
from limits.storage import storage_from_string
from limits.util import WindowStats
from redis.asyncio import BlockingConnectionPool, ConnectionPool
from redis.exceptions import RedisError

from palaestra.errors import ConfigurationError, TooManyRequests

__all__ = ["Attempt", "Throttle", "client_address"]

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


@dataclass(slots=True)
class _Slots:
    """The attempts in flight against one key, and their waiting room."""

    users: int = 0  # in flight or waiting: the entry is dropped when none is left
    in_flight: int = 0
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)


@dataclass(slots=True)
class Attempt:
    """One credential being checked under the throttle (see :meth:`Throttle.attempt`)."""

    throttle: Throttle
    address: str
    target: str | None

    async def failed(self) -> None:
        """The credential was wrong: count it, before its slot is given back."""
        await self.throttle.failed(self.address, self.target)


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
        self._slots: dict[tuple[str, str], _Slots] = {}

    def address_of(self, peer: str | None, forwarded_for: str | None) -> str:
        return client_address(peer, forwarded_for, self.trusted)

    @asynccontextmanager
    async def attempt(self, address: str, target: str | None = None) -> AsyncIterator[Attempt]:
        """Check one credential inside the block, holding a slot of ``address`` (and of
        ``target``) for it; :meth:`Attempt.failed` counts a wrong one.

        Raises :class:`TooManyRequests` before the block while the address (or target) is
        over its limit. While as many attempts are in flight as failures are left in the
        window, the next one waits for one of them to end: right, it frees its slot; wrong,
        it spends a failure, and at the limit the waiting are refused."""
        keys = []
        if self.limit:
            keys.append((self._item, _NAMESPACE, address, "from this address"))
        if target is not None and self.target_limit:
            keys.append((self._target_item, _TARGETS, target, "for this credential"))
        held: list[tuple[str, str]] = []
        try:
            for item, namespace, key, where in keys:
                await self._enter(item, namespace, key, where)
                held.append((namespace, key))
            yield Attempt(self, address, target)
        finally:
            for namespace, key in reversed(held):
                # Shielded: a request cancelled on its way out still gives its slot back.
                await asyncio.shield(self._leave(namespace, key))

    async def _enter(self, item: RateLimitItem, namespace: str, key: str, where: str) -> None:
        slots = self._slots.setdefault((namespace, key), _Slots())
        slots.users += 1
        try:
            async with slots.changed:
                while True:
                    # Read under the condition's lock: an attempt ending counts its failure
                    # before it gives its slot back, so each is seen in one or the other.
                    stats = await self._stats(item, namespace, key)
                    if stats is None:  # the count is unreachable: let the attempt through
                        break
                    if stats.remaining <= 0:
                        raise TooManyRequests(
                            f"Too many failed authentications {where}; try again later",
                            # The limiter keeps wall-clock times of its own.
                            retry_after=stats.reset_time - time.time(),
                        )
                    if slots.in_flight < stats.remaining:
                        break
                    await slots.changed.wait()
                slots.in_flight += 1
        except BaseException:
            self._release(namespace, key, slots)
            raise

    async def _leave(self, namespace: str, key: str) -> None:
        slots = self._slots[(namespace, key)]
        async with slots.changed:
            slots.in_flight -= 1
            slots.changed.notify_all()
        self._release(namespace, key, slots)

    def _release(self, namespace: str, key: str, slots: _Slots) -> None:
        slots.users -= 1
        if not slots.users:
            del self._slots[(namespace, key)]

    async def _stats(self, item: RateLimitItem, namespace: str, key: str) -> WindowStats | None:
        try:
            return await self._limiter.get_window_stats(item, namespace, key)
        except RedisError as exc:
            log.warning("the guessing throttle cannot reach Redis", error=type(exc).__name__)
            return None

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
