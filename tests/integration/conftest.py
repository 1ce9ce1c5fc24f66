"""The integration tier: real servers on 127.0.0.1, and a guard that keeps every test there.

The ``network`` guard is on for every test of this tier. It lets sockets
connect to loopback only and lets names resolve only when they are numeric or
``localhost``; names under ``.invalid`` fail as the DNS would fail them
(RFC 6761), so no query leaves the machine. Anything else is blocked, and the
test fails. Tests read ``network.connects`` and ``network.lookups`` to prove
that a refused call sent nothing.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from palaestra.egress import EgressClient, EgressPolicy
from tests.integration.servers import Tls, make_tls

#: The names of the test certificate (``agent.test`` is answered by a ScriptedResolver).
TLS_NAMES = ("127.0.0.1", "localhost", "agent.test")


class NetworkGuard:
    """Records every connect and name lookup; refuses anything that would leave loopback."""

    def __init__(self) -> None:
        self.connects: list[tuple[str, int]] = []
        self.lookups: list[str] = []
        self.violations: list[str] = []

    def check_connect(self, family: int, address: Any) -> None:
        if family not in (socket.AF_INET, socket.AF_INET6):
            return  # a unix socket, say
        host, port = str(address[0]), int(address[1])
        self.connects.append((host, port))
        if not _is_loopback(host):
            self.violations.append(f"connect to {host}:{port}")
            raise PermissionError(errno.EACCES, f"blocked by the test network guard: {host}")

    def check_lookup(self, name: str) -> str | None:
        """Why ``name`` may not be looked up for real, or ``None``."""
        self.lookups.append(name)
        lowered = name.lower()
        if lowered == "localhost":
            return None
        if lowered.rstrip(".").endswith(".invalid"):
            return "Name or service not known"
        self.violations.append(f"lookup of {name!r}")
        return f"blocked by the test network guard: {name!r} is not a loopback name"


def _is_loopback(host: str) -> bool:
    try:
        address = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return False
    # ::ffff:127.0.0.1 is loopback too, but Python before 3.13 does not say so.
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


@pytest.fixture(autouse=True)
def network(monkeypatch: pytest.MonkeyPatch) -> Iterator[NetworkGuard]:
    """Keep the test on loopback; the guard tells what the test tried to reach."""
    guard = NetworkGuard()
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        guard.check_connect(self.family, address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        guard.check_connect(self.family, address)
        return real_connect_ex(self, address)

    def getaddrinfo(
        host: bytes | str | None,
        port: bytes | str | int | None,
        family: int = 0,
        type: int = 0,
        proto: int = 0,
        flags: int = 0,
    ) -> Any:
        if host is None:
            return real_getaddrinfo(host, port, family, type, proto, flags)
        try:  # numeric hosts never reach the DNS
            return real_getaddrinfo(host, port, family, type, proto, flags | socket.AI_NUMERICHOST)
        except socket.gaierror:
            pass
        name = host.decode() if isinstance(host, bytes) else host
        why = guard.check_lookup(name)
        if why is not None:
            raise socket.gaierror(socket.EAI_NONAME, why)
        return real_getaddrinfo(host, port, family, type, proto, flags)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield guard
    if guard.violations:
        pytest.fail(f"the test tried to leave loopback: {guard.violations}")


@pytest.fixture(scope="session")
def tls() -> Tls:
    """A private CA and a certificate for :data:`TLS_NAMES`."""
    return make_tls(*TLS_NAMES)


@pytest.fixture
def loopback_policy() -> EgressPolicy:
    """The development policy: loopback allowed, plain http included."""
    return EgressPolicy.allowing(["127.0.0.0/8"])


@pytest.fixture
async def client(loopback_policy: EgressPolicy) -> AsyncIterator[EgressClient]:
    """An egress client that may call 127.0.0.0/8 and trusts only the system CAs."""
    async with EgressClient(loopback_policy) as egress:
        yield egress


@pytest.fixture
async def tls_client(loopback_policy: EgressPolicy, tls: Tls) -> AsyncIterator[EgressClient]:
    """An egress client that may call 127.0.0.0/8 and trusts the test CA."""
    async with EgressClient(loopback_policy, ssl_context=tls.client) as egress:
        yield egress
