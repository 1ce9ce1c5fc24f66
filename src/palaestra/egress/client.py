"""The egress client: the only way Palaestra calls out.

Every call is judged by the :class:`EgressPolicy` on the addresses it actually
connects to: host names are resolved by :class:`PolicyResolver`, which checks
every address it found, and only checked addresses are connected to, so a DNS
answer that changes between a check and a connect (rebinding) cannot slip
through. Redirects are never followed. The body is read as it arrives and
capped after decompression, and the whole call runs under one deadline; a
liveness GET does not read the body of a 2xx at all, since its status alone
decides. Every outcome, good or bad, is an :class:`EgressResult`; a
misbehaving endpoint never raises. The HTTP/1.1 exchanges themselves are
:mod:`.wire`'s.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp.abc import AbstractResolver
from yarl import URL

from palaestra.clock import Clock, SystemClock
from palaestra.errors import EgressRefused
from palaestra.protocol.constants import RESPONSE_CAP_BYTES
from palaestra.protocol.failures import Failure
from palaestra.protocol.jsonwire import InvalidJson, loads

from .classify import PEER_ERRORS, classify, refusal_text
from .connections import Connections
from .deadlines import Deadline, DeadlineTimers
from .policy import EgressPolicy
from .resolve import PolicyResolver, plain_http
from .wire import PeerError, TooLarge, Want, request_head

__all__ = ["EgressClient", "EgressResult", "Signer"]

#: Makes the headers that sign a request, from its URL and raw body, right before it is
#: sent (the protocol's signer, :func:`palaestra.protocol.hmac_signer`); opaque here.
Signer = Callable[[str, bytes], Mapping[str, str]]

log = structlog.get_logger(__name__)

_CHECKED_URLS = 4096  # endpoint URLs remembered as parsed and judged


@dataclass(frozen=True, slots=True)
class EgressResult:
    """What one outbound call came to."""

    url: str
    latency_ms: float
    status: int | None = None
    body: bytes = b""
    data: Any = None
    failure: Failure | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def reason(self) -> str | None:
        return None if self.failure is None else self.failure.reason


class EgressClient:
    """Calls out under the egress policy, on connections of its own (:mod:`.wire`).

    Use as an async context manager, or call :meth:`close`. ``resolver``
    replaces the system resolver (tests use it to script DNS answers). A refusal of the
    address a host name resolved to is given without the address (the platform's DNS is
    not for its users to map) and logged with it, unless ``reveal_addresses`` (for tools
    the author runs on their own machine, such as ``palaestra check``).
    """

    def __init__(
        self,
        policy: EgressPolicy | None = None,
        *,
        clock: Clock | None = None,
        resolver: AbstractResolver | None = None,
        ssl_context: ssl.SSLContext | None = None,
        max_connections: int = 0,
        keepalive: bool = True,
        cap_bytes: int = RESPONSE_CAP_BYTES,
        reveal_addresses: bool = False,
    ) -> None:
        self.policy = policy or EgressPolicy()
        self.reveal_addresses = reveal_addresses
        self.clock = clock or SystemClock()
        self.cap_bytes = cap_bytes
        self._resolver = PolicyResolver(self.policy, resolver)
        self._ssl = ssl_context
        self._max_connections = max_connections
        self._keepalive = keepalive
        self._connections: Connections | None = None
        self._deadlines: DeadlineTimers | None = None
        self._checked: dict[str, tuple[EgressPolicy, URL]] = {}

    async def __aenter__(self) -> EgressClient:
        self._ensure_connections()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _ensure_connections(self) -> Connections:
        if self._connections is None:
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            self._connections = Connections(
                self._resolver, self._ssl, limit=self._max_connections, keepalive=self._keepalive
            )
        return self._connections

    def _refusal(self, target: URL, exc: EgressRefused) -> str:
        """The reason a refused call gives: the address a name resolved to is named only by
        a client that reveals it (the author's own tools); the platform's goes to the log."""
        if self.reveal_addresses or exc.exact is None:
            return exc.exact_message
        log.info("egress refused a resolved address", host=target.host, exact=exc.exact)
        return exc.message

    def _target(self, url: str) -> URL:
        """``url`` as it is sent and judged by the policy (:meth:`EgressPolicy.target`); pure,
        so remembered (refusals are not)."""
        checked = self._checked.get(url)
        if checked is not None and checked[0] is self.policy:
            return checked[1]
        target = self.policy.target(url)
        if len(self._checked) >= _CHECKED_URLS:
            self._checked.clear()
        self._checked[url] = (self.policy, target)
        return target

    def _deadline(self, seconds: float) -> Deadline:
        loop = asyncio.get_running_loop()
        if self._deadlines is None or self._deadlines.loop is not loop:
            self._deadlines = DeadlineTimers(loop)
        return self._deadlines.after(seconds)

    async def close(self) -> None:
        if self._connections is not None:
            self._connections.close()
            self._connections = None

    def get(self, url: str, *, user_agent: str, deadline: float) -> Awaitable[EgressResult]:
        """A liveness GET (health, verify, probe): the status decides, as the seed says
        ("Response body Ignored"). The body of a 2xx is not read, so one that is huge,
        endless or not what its Content-Encoding says cannot fail the call; a non-2xx
        keeps the start of its body for the reason line."""
        return self.request("GET", url, user_agent=user_agent, deadline=deadline, status_only=True)

    def post_json(
        self,
        url: str,
        body: bytes,
        *,
        user_agent: str,
        deadline: float,
        signer: Signer | None = None,
        headers: Mapping[str, str] | None = None,
        deferred_ok: bool = False,
        cap_bytes: int | None = None,
    ) -> Awaitable[EgressResult]:
        """POST raw JSON ``body``; a 2xx reply must be JSON (a 202 need not, if ``deferred_ok``:
        its body is parsed when it is JSON, and :func:`palaestra.protocol.answers_later` says
        whether it is a result or an acceptance). ``cap_bytes`` replaces the client's cap on
        the reply's body for this call.

        Like :meth:`get`, it hands back :meth:`request`'s coroutine, to be awaited."""
        return self.request(
            "POST",
            url,
            body=body,
            user_agent=user_agent,
            deadline=deadline,
            signer=signer,
            headers=headers,
            deferred_ok=deferred_ok,
            cap_bytes=cap_bytes,
        )

    async def request(
        self,
        method: str,
        url: str,
        *,
        user_agent: str,
        deadline: float,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        signer: Signer | None = None,
        expect_json: bool = True,
        deferred_ok: bool = False,
        status_only: bool = False,
        cap_bytes: int | None = None,
    ) -> EgressResult:
        """Make one call under the policy and the deadline (seconds); never raises for the peer.

        With ``status_only``, a 2xx is a success without its body being read."""
        started = self.clock.monotonic()
        deadline_ms = round(deadline * 1000)
        try:
            target = self._target(url)
        except (EgressRefused, ValueError) as exc:
            return self._done(url, started, failure=Failure.refused(refusal_text(exc)))

        request_headers = {
            # The host as written, a trailing dot kept: a browser keeps it, and so does the
            # signed host+pathname.
            "Host": target.raw_authority,
            "User-Agent": user_agent,
            "Accept": "*/*",
            "Accept-Encoding": "gzip, deflate",
        }
        if body is not None:
            request_headers["Content-Type"] = "application/json"
        if headers:
            request_headers.update(headers)
        if signer is not None:
            request_headers.update(signer(url, body or b""))
        try:
            head = request_head(method, target, request_headers, body)
        except ValueError as exc:
            return self._done(url, started, failure=Failure.refused(str(exc)))

        connections = self._ensure_connections()
        cap = self.cap_bytes if cap_bytes is None else cap_bytes
        want = Want.STATUS if status_only else Want.BODY
        token = plain_http.set(target.scheme == "http")
        try:
            with self._deadline(deadline):
                reply = await connections.exchange(target, head, body or b"", want, cap)
        except TimeoutError:
            return self._done(url, started, failure=Failure.timeout(deadline_ms))
        except TooLarge as exc:
            # Reached and answered: the status is kept (the seed's wizard checks tell them apart).
            too_large = Failure.too_large(exc.status, cap_bytes)
            return self._done(url, started, exc.status, failure=too_large)
        except EgressRefused as exc:
            return self._done(url, started, failure=Failure.refused(self._refusal(target, exc)))
        except PeerError as exc:
            return self._done(url, started, failure=exc.failure)
        except PEER_ERRORS as exc:
            return self._done(url, started, failure=classify(exc))
        finally:
            plain_http.reset(token)

        status, raw = reply.status, reply.body
        if not 200 <= status < 300:
            text = raw.decode("utf-8", errors="replace")
            return self._done(url, started, status, raw, failure=Failure.http_status(status, text))
        if status_only:
            return self._done(url, started, status)
        if not expect_json:
            return self._done(url, started, status, raw)
        try:
            data = loads(raw)
        except InvalidJson as exc:
            if deferred_ok and status == 202:
                return self._done(url, started, status, raw)  # not a reply: an acceptance
            return self._done(url, started, status, raw, failure=Failure.invalid_json(exc.message))
        return self._done(url, started, status, raw, data=data)

    def _done(
        self,
        url: str,
        started: float,
        status: int | None = None,
        body: bytes = b"",
        *,
        data: Any = None,
        failure: Failure | None = None,
    ) -> EgressResult:
        latency_ms = (self.clock.monotonic() - started) * 1000
        return EgressResult(url, latency_ms, status, body, data, failure)
