"""The egress client's open connections, by origin, made under the policy.

A connection is made to addresses the :class:`~.resolve.PolicyResolver`
checked (or to the literal address the policy checked in the URL), through
``aiohappyeyeballs`` as aiohttp connects, and kept for the next call to the
same origin only after a clean, complete reply (:mod:`.wire`), and for at
most :data:`IDLE_S` of idleness.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from typing import Final

import aiohappyeyeballs
from aiohttp.abc import AbstractResolver
from yarl import URL

from palaestra.protocol.failures import UnreachableStage

from .wire import Connection, Want, WireReply, os_detail, unreachable

__all__ = ["IDLE_S", "Connections"]

#: Agents' servers commonly drop idle connections after 5 s (uvicorn, Node); a request
#: racing that close fails with no response and cannot be retried (a taskId reaches an
#: endpoint at most once), so an idle connection is used again only within this time.
IDLE_S: Final = 2.0
_HAPPY_EYEBALLS_DELAY_S: Final = 0.25  # aiohttp's

Origin = tuple[str, str, int]  # scheme, host, port


class Connections:
    """Open connections by origin, made under the policy, kept while idle for :data:`IDLE_S`.

    ``resolver`` answers and checks host names (a :class:`~.resolve.PolicyResolver`);
    ``limit`` bounds the exchanges under way at once (0: no bound)."""

    def __init__(
        self,
        resolver: AbstractResolver,
        ssl_context: ssl.SSLContext,
        *,
        limit: int = 0,
        keepalive: bool = True,
    ) -> None:
        self._resolver = resolver
        self._ssl = ssl_context
        self._keepalive = keepalive
        self._idle: dict[Origin, list[Connection]] = {}
        self._limit = asyncio.Semaphore(limit) if limit > 0 else None
        self._swept_at = 0.0

    async def exchange(
        self, target: URL, head: bytes, body: bytes, want: Want, cap: int
    ) -> WireReply:
        """Send the request (``head``, then ``body``, whole) to ``target``'s origin and read
        its reply as ``want`` says; :class:`PeerError`, :class:`TooLarge` or an
        ``EgressRefused`` from the resolver otherwise. Cancelled (a deadline), the
        connection is closed."""
        if self._limit is None:
            return await self._exchange(target, head, body, want, cap)
        async with self._limit:
            return await self._exchange(target, head, body, want, cap)

    async def _exchange(
        self, target: URL, head: bytes, body: bytes, want: Want, cap: int
    ) -> WireReply:
        origin = (target.scheme, target.raw_host or "", target.port or 0)
        connection = self._take(origin) or await self._connect(target, origin)
        try:
            reply = await connection.start(head, body, want, cap)
        except BaseException:
            connection.close()
            raise
        if self._keepalive and connection.done_cleanly():
            connection.idle_since = asyncio.get_running_loop().time()
            self._idle.setdefault(origin, []).append(connection)
        else:
            connection.close()
        return reply

    def _take(self, origin: Origin) -> Connection | None:
        now = asyncio.get_running_loop().time()
        if now - self._swept_at > IDLE_S:
            self._sweep(now)
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            if connection.open and now - connection.idle_since < IDLE_S:
                return connection
            connection.close()
        return None

    def _sweep(self, now: float) -> None:
        """Close every connection idle too long, so that none is held open for nothing."""
        self._swept_at = now
        for origin, idle in list(self._idle.items()):
            kept = [c for c in idle if c.open and now - c.idle_since < IDLE_S]
            for connection in idle:
                if connection not in kept:
                    connection.close()
            if kept:
                self._idle[origin] = kept
            else:
                del self._idle[origin]

    async def _connect(self, target: URL, origin: Origin) -> Connection:
        scheme, host, port = origin
        infos = await self._addresses(host, port)
        loop = asyncio.get_running_loop()
        try:
            sock = await aiohappyeyeballs.start_connection(
                infos, happy_eyeballs_delay=_HAPPY_EYEBALLS_DELAY_S
            )
        except OSError as exc:
            raise unreachable(UnreachableStage.CONNECT, os_detail(exc)) from exc
        tls = scheme == "https"
        try:
            _, connection = await loop.create_connection(
                Connection,
                sock=sock,
                ssl=self._ssl if tls else None,
                server_hostname=host.rstrip(".") if tls else None,
            )
        except ssl.SSLCertVerificationError as exc:
            sock.close()
            raise unreachable(UnreachableStage.TLS, str(exc)) from exc
        except ssl.SSLError as exc:
            sock.close()
            raise unreachable(UnreachableStage.TLS, os_detail(exc)) from exc
        except OSError as exc:
            sock.close()
            raise unreachable(UnreachableStage.CONNECT, os_detail(exc)) from exc
        except BaseException:
            sock.close()
            raise
        if not self._keepalive:
            connection.reusable = False
        return connection

    async def _addresses(self, host: str, port: int) -> list[aiohappyeyeballs.AddrInfoType]:
        """The checked addresses to try for ``host``: a literal address as it is (the policy
        judged it in the URL), a name through the resolver, which judges every answer."""
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            try:
                answers = await self._resolver.resolve(host, port, family=socket.AF_UNSPEC)
            except OSError as exc:
                raise unreachable(UnreachableStage.DNS, os_detail(exc)) from exc
            return [
                _addr_info(answer["host"], answer["port"], answer["family"]) for answer in answers
            ]
        family = socket.AF_INET6 if literal.version == 6 else socket.AF_INET
        return [_addr_info(host, port, family)]

    def close(self) -> None:
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()


def _addr_info(host: str, port: int, family: int) -> aiohappyeyeballs.AddrInfoType:
    address: tuple[str, int] | tuple[str, int, int, int]
    address = (host, port, 0, 0) if family == socket.AF_INET6 else (host, port)
    return (family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", address)
