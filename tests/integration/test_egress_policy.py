"""The egress address policy, end to end: what the client refuses, and that it sends nothing.

Refused destinations are never connected to; the ``network`` guard (see
``conftest.py``) records every connect and name lookup, so each refusal also
proves that nothing left the process. No test here contacts a public address:
public destinations are only judged, by :func:`resolve_checked`.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import AsyncIterator

import pytest

from palaestra.egress import EgressClient, EgressPolicy, resolve_checked
from palaestra.errors import EgressRefused
from tests.integration.conftest import NetworkGuard
from tests.integration.servers import LOOPBACK, ScriptedResolver, json_reply, serve

USER_AGENT = "palaestra-tests/1.0"
REFUSED = "Endpoint refused by egress policy: "

_LOOPBACK = "127.0.0.1 is a loopback address"
_LOOPBACK_MAPPED = "::ffff:7f00:1 is the IPv4-mapped form of 127.0.0.1, a loopback address"
_THIS_NETWORK = "an unspecified ('this network') address"
_ONLY_HTTPS = (
    "plain http to {} is not allowed, only https (http is for ranges the operator allowed)"
)

#: URL, why it is refused. No row is resolved except those in ``_RESOLVED_ROWS``.
REFUSED_URLS = [
    # Loopback, in every spelling a URL parser or the C library accepts.
    pytest.param("https://127.0.0.1/", _LOOPBACK, id="loopback"),
    pytest.param(
        "https://127.255.255.254:8443/x",
        "127.255.255.254 is a loopback address",
        id="loopback-top",
    ),
    pytest.param(
        "https://2130706433/", "2130706433 means 127.0.0.1, a loopback address", id="decimal"
    ),
    pytest.param(
        "https://0177.0.0.1/", "0177.0.0.1 means 127.0.0.1, a loopback address", id="octal"
    ),
    pytest.param(
        "https://017700000001/",
        "017700000001 means 127.0.0.1, a loopback address",
        id="octal-whole",
    ),
    pytest.param(
        "https://0x7f.0.0.1/", "0x7f.0.0.1 means 127.0.0.1, a loopback address", id="hex-octet"
    ),
    pytest.param(
        "https://0x7f000001/", "0x7f000001 means 127.0.0.1, a loopback address", id="hex-whole"
    ),
    pytest.param(
        "https://0x7f.0x0.0x0.0x1/",
        "0x7f.0x0.0x0.0x1 means 127.0.0.1, a loopback address",
        id="hex-all",
    ),
    pytest.param("https://127.1/", "127.1 means 127.0.0.1, a loopback address", id="short"),
    pytest.param(
        "https://127.0.1/", "127.0.1 means 127.0.0.1, a loopback address", id="short-three"
    ),
    pytest.param("https://0x7f.1/", "0x7f.1 means 127.0.0.1, a loopback address", id="short-hex"),
    pytest.param(
        "https://127.000.000.001/",
        "127.000.000.001 means 127.0.0.1, a loopback address",
        id="zero-padded",
    ),
    pytest.param("https://127.0.0.1./", "127.0.0.1. means 127.0.0.1, a loopback address", id="dot"),
    pytest.param("https://１２７.０.０.１/", _LOOPBACK, id="fullwidth-digits"),
    pytest.param("https://127。0。0。1/", _LOOPBACK, id="ideographic-dots"),
    pytest.param("https://[::1]/", "::1 is a loopback address", id="v6-loopback"),
    pytest.param("https://[0:0:0:0:0:0:0:1]/", "::1 is a loopback address", id="v6-long"),
    pytest.param("https://[::ffff:127.0.0.1]/", _LOOPBACK_MAPPED, id="v4-mapped"),
    pytest.param("https://[::ffff:7f00:1]/", _LOOPBACK_MAPPED, id="v4-mapped-hex"),
    pytest.param(
        "https://[::127.0.0.1]/",
        "::7f00:1 is the IPv4-compatible form of 127.0.0.1, a loopback address",
        id="v4-compatible",
    ),
    pytest.param(
        "https://[64:ff9b::7f00:1]/",
        "64:ff9b::7f00:1 is the NAT64 form of 127.0.0.1, a loopback address",
        id="nat64",
    ),
    pytest.param(
        "https://[2002:7f00:1::]/",
        "2002:7f00:1:: is the 6to4 form of 127.0.0.1, a loopback address",
        id="6to4",
    ),
    pytest.param("https://localhost/", _LOOPBACK, id="name-localhost"),
    pytest.param("https://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ:8443/", _LOOPBACK, id="name-localhost-idna"),
    # Unspecified.
    pytest.param("https://0.0.0.0/", f"0.0.0.0 is {_THIS_NETWORK}", id="zeros"),
    pytest.param("https://0/", f"0 means 0.0.0.0, {_THIS_NETWORK}", id="zero"),
    pytest.param("https://[::]/", ":: is the unspecified address", id="v6-unspecified"),
    # Link-local and cloud metadata.
    pytest.param(
        "https://169.254.169.254/latest/meta-data/",
        "169.254.169.254 is a link-local address",
        id="metadata",
    ),
    pytest.param(
        "https://[::ffff:169.254.169.254]/",
        "::ffff:a9fe:a9fe is the IPv4-mapped form of 169.254.169.254, a link-local address",
        id="metadata-mapped",
    ),
    pytest.param(
        "https://[64:ff9b::a9fe:a9fe]/",
        "64:ff9b::a9fe:a9fe is the NAT64 form of 169.254.169.254, a link-local address",
        id="metadata-nat64",
    ),
    pytest.param(
        "https://[fd00:ec2::254]/",
        "fd00:ec2::254 is a unique-local (private) address",
        id="metadata-v6",
    ),
    pytest.param("https://[fe80::1]/", "fe80::1 is a link-local address", id="v6-link-local"),
    pytest.param(
        "https://[fe80::1%25eth0]/", "fe80::1%25eth0 is a link-local address", id="v6-zone"
    ),
    # Private and shared.
    pytest.param("https://10.0.0.1/", "10.0.0.1 is a private address", id="10/8"),
    pytest.param("https://10.255.255.255/", "10.255.255.255 is a private address", id="10/8-top"),
    pytest.param("https://172.16.0.1/", "172.16.0.1 is a private address", id="172.16/12"),
    pytest.param(
        "https://172.31.255.254/", "172.31.255.254 is a private address", id="172.16/12-top"
    ),
    pytest.param("https://192.168.0.1/", "192.168.0.1 is a private address", id="192.168/16"),
    pytest.param("https://100.64.0.1/", "100.64.0.1 is a shared (CGNAT) address", id="cgnat"),
    pytest.param(
        "https://100.127.255.254/", "100.127.255.254 is a shared (CGNAT) address", id="cgnat-top"
    ),
    pytest.param("https://[fc00::1]/", "fc00::1 is a unique-local (private) address", id="fc00"),
    pytest.param(
        "https://[fd12:3456:789a::1]/",
        "fd12:3456:789a::1 is a unique-local (private) address",
        id="fd00",
    ),
    pytest.param(
        "https://[2002:a00:1::]/",
        "2002:a00:1:: is the 6to4 form of 10.0.0.1, a private address",
        id="6to4-private",
    ),
    # Multicast, reserved, broadcast.
    pytest.param("https://224.0.0.1/", "224.0.0.1 is a multicast address", id="multicast"),
    pytest.param(
        "https://239.255.255.250/", "239.255.255.250 is a multicast address", id="multicast-ssdp"
    ),
    pytest.param("https://[ff02::1]/", "ff02::1 is a multicast address", id="v6-multicast"),
    pytest.param("https://[ff0e::1]/", "ff0e::1 is a multicast address", id="v6-multicast-global"),
    pytest.param("https://240.0.0.1/", "240.0.0.1 is a reserved address", id="240/4"),
    pytest.param(
        "https://255.255.255.255/", "255.255.255.255 is the broadcast address", id="broadcast"
    ),
    # Documentation, benchmarking and other special-purpose ranges.
    pytest.param("https://192.0.2.1/", "192.0.2.1 is a documentation address", id="test-net-1"),
    pytest.param(
        "https://198.51.100.7/", "198.51.100.7 is a documentation address", id="test-net-2"
    ),
    pytest.param("https://203.0.113.9/", "203.0.113.9 is a documentation address", id="test-net-3"),
    pytest.param("https://[2001:db8::1]/", "2001:db8::1 is a documentation address", id="v6-doc"),
    pytest.param("https://[3fff::1]/", "3fff::1 is a documentation address", id="v6-doc-new"),
    pytest.param("https://198.18.0.1/", "198.18.0.1 is a benchmarking address", id="benchmark"),
    pytest.param("https://192.0.0.8/", "192.0.0.8 is an IETF protocol assignment", id="ietf"),
    pytest.param(
        "https://192.88.99.1/", "192.88.99.1 is a 6to4 relay anycast address", id="6to4-relay"
    ),
    pytest.param("https://[100::1]/", "100::1 is a discard-only address", id="discard"),
    pytest.param("https://[fec0::1]/", "fec0::1 is a site-local address", id="site-local"),
    pytest.param("https://[2001::1]/", "2001::1 is an IETF protocol assignment", id="teredo"),
    pytest.param(
        "https://[64:ff9b:1::1]/", "64:ff9b:1::1 is a local-use NAT64 address", id="nat64-local"
    ),
    pytest.param(
        "https://[::ffff:0:127.0.0.1]/",
        "::ffff:0:7f00:1 is not a global unicast address",
        id="v4-translated",
    ),
    pytest.param(
        "https://[::8.8.8.8]/",
        "::808:808 is a deprecated IPv4-compatible address",
        id="v4-compatible-public",
    ),
    # Schemes, credentials, missing hosts.
    pytest.param("http://example.com/", "plain http is not allowed, only https", id="http-name"),
    pytest.param("http://8.8.8.8/", _ONLY_HTTPS.format("8.8.8.8"), id="http-public"),
    pytest.param("ftp://example.com/", "scheme 'ftp' is not allowed, only https", id="ftp"),
    pytest.param("file:///etc/passwd", "scheme 'file' is not allowed, only https", id="file"),
    pytest.param(
        "gopher://127.0.0.1:70/_", "scheme 'gopher' is not allowed, only https", id="gopher"
    ),
    pytest.param("ws://example.com/socket", "scheme 'ws' is not allowed, only https", id="ws"),
    pytest.param("data:text/plain,hi", "scheme 'data' is not allowed, only https", id="data"),
    pytest.param("//example.com/", "scheme '(none)' is not allowed, only https", id="no-scheme"),
    pytest.param(
        "https://user:pass@example.com/",
        "credentials in the URL are not allowed",
        id="credentials",
    ),
    pytest.param("https://user@example.com/", "credentials in the URL are not allowed", id="user"),
    pytest.param(
        "https://:secret@example.com/", "credentials in the URL are not allowed", id="password"
    ),
    pytest.param("https:///path", "the URL has no host", id="no-host"),
    # Malformed hosts that look like addresses.
    pytest.param("https://256.0.0.1/", "256.0.0.1 is not a valid IPv4 address", id="octet-256"),
    pytest.param("https://1.2.3.4.5/", "1.2.3.4.5 is not a valid IPv4 address", id="five-parts"),
    pytest.param(
        "https://0x100000000/", "0x100000000 is not a valid IPv4 address", id="hex-overflow"
    ),
    pytest.param("https://8.8.8.08/", "8.8.8.08 is not a valid IPv4 address", id="bad-octal-digit"),
    pytest.param("https://3.3/", "3.3 is a non-canonical spelling of 3.0.0.3", id="short-public"),
    pytest.param("https://[a:b]/", "a:b is not a valid IPv6 address", id="v6-not-an-address"),
    pytest.param("https://[1::2::3]/", "1::2::3 is not a valid IPv6 address", id="v6-two-gaps"),
    pytest.param("https://[localhost:1]/", "localhost:1 is not a valid IPv6 address", id="v6-name"),
    pytest.param(
        "https://127.0.0.1:99999/",
        "invalid URL 'https://127.0.0.1:99999/': the port 99999 is out of range (1-65535)",
        id="bad-port",
    ),
]


#: The rows whose host is a name: resolved for real (``localhost`` only), then refused.
_RESOLVED_ROWS = {"https://localhost/", "https://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ:8443/"}


WITHHELD = "resolves to an address the platform does not reach"


def _lookups(url: str) -> list[str]:
    return ["localhost"] if url in _RESOLVED_ROWS else []


@pytest.fixture
async def strict_client() -> AsyncIterator[EgressClient]:
    """The production policy: https to globally routable addresses only."""
    async with EgressClient() as egress:
        yield egress


@pytest.mark.parametrize(("url", "why"), REFUSED_URLS)
async def test_client_refuses_and_sends_nothing(
    strict_client: EgressClient, network: NetworkGuard, url: str, why: str
) -> None:
    result = await strict_client.request("GET", url, user_agent=USER_AGENT, deadline=2.0)
    assert result.reason == REFUSED + _told(url, why)
    assert (result.status, result.body) == (None, b"")
    assert network.connects == []
    assert network.lookups == _lookups(url)


def _told(url: str, why: str) -> str:
    """What the platform says of a refused URL: the address a name resolved to withheld."""
    return f"{_lookups(url)[0]} {WITHHELD}" if _lookups(url) else why


@pytest.mark.parametrize(("url", "why"), REFUSED_URLS)
async def test_resolve_checked_refuses_the_same(network: NetworkGuard, url: str, why: str) -> None:
    with pytest.raises(EgressRefused) as refused:
        await resolve_checked(EgressPolicy(), url)
    assert refused.value.message == _told(url, why)
    assert refused.value.exact_message == why  # for `palaestra url-check`, run locally
    assert network.connects == []
    assert network.lookups == _lookups(url)


# Host names whose DNS answers the policy refuses.

RESOLVED_REFUSALS = [
    pytest.param(["10.0.0.1"], "10.0.0.1 is a private address", id="private"),
    pytest.param(["169.254.169.254"], "169.254.169.254 is a link-local address", id="metadata"),
    pytest.param(["::1"], "::1 is a loopback address", id="v6-loopback"),
    pytest.param(["::ffff:127.0.0.1"], _LOOPBACK_MAPPED, id="v4-mapped"),
    pytest.param(["fe80::1%eth0"], "fe80::1%eth0 is a link-local address", id="zone"),
    pytest.param(["127.1"], _LOOPBACK, id="non-canonical-answer"),
    pytest.param(["8.8.8.8", "10.0.0.1"], "10.0.0.1 is a private address", id="mixed"),
    pytest.param(
        ["2606:4700:4700::1111", "fd00::1"],
        "fd00::1 is a unique-local (private) address",
        id="mix6",
    ),
    pytest.param(
        ["8.8.8.8", "evil.example"],
        "the resolver returned a non-address: 'evil.example'",
        id="non-address",
    ),
]


@pytest.mark.parametrize(("answers", "why"), RESOLVED_REFUSALS)
async def test_client_refuses_a_name_with_any_refused_address(
    network: NetworkGuard, answers: list[str], why: str
) -> None:
    resolver = ScriptedResolver({"agent.example": answers})
    async with EgressClient(resolver=resolver) as client:
        result = await client.request(
            "GET", "https://agent.example/", user_agent=USER_AGENT, deadline=2.0
        )
    assert result.reason == f"{REFUSED}agent.example {WITHHELD}"
    assert resolver.calls == ["agent.example"]
    assert network.connects == []
    resolver = ScriptedResolver({"agent.example": answers})
    async with EgressClient(resolver=resolver, reveal_addresses=True) as client:
        result = await client.request(
            "GET", "https://agent.example/", user_agent=USER_AGENT, deadline=2.0
        )
    assert result.reason == REFUSED + why  # `palaestra check`: the author's own DNS


@pytest.mark.parametrize(("answers", "why"), RESOLVED_REFUSALS)
async def test_resolve_checked_refuses_a_name_with_any_refused_address(
    answers: list[str], why: str
) -> None:
    resolver = ScriptedResolver({"agent.example": answers})
    with pytest.raises(EgressRefused) as refused:
        await resolve_checked(EgressPolicy(), "https://agent.example/", resolver)
    assert refused.value.message == f"agent.example {WITHHELD}"
    assert refused.value.exact_message == why


async def test_resolve_checked_reports_a_name_that_does_not_resolve(
    network: NetworkGuard,
) -> None:
    with pytest.raises(EgressRefused) as refused:
        await resolve_checked(EgressPolicy(), "https://agent.invalid/")
    assert refused.value.message == "agent.invalid does not resolve: Name or service not known"
    assert network.lookups == ["agent.invalid"]


# What is allowed.


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("https://8.8.8.8/", "8.8.8.8"),
        ("https://1.1.1.1:8443/agent", "1.1.1.1"),
        ("https://[2606:4700:4700::1111]/", "2606:4700:4700::1111"),
        ("https://[::ffff:8.8.8.8]/", "::ffff:808:808"),
        ("HTTPS://8.8.8.8/", "8.8.8.8"),
    ],
)
async def test_resolve_checked_allows_a_public_literal_without_resolving(
    network: NetworkGuard, url: str, address: str
) -> None:
    assert await resolve_checked(EgressPolicy(), url) == [ipaddress.ip_address(address)]
    assert network.lookups == []
    assert network.connects == []


async def test_resolve_checked_allows_a_name_with_only_public_addresses() -> None:
    resolver = ScriptedResolver({"agent.example": ["8.8.8.8", "2606:4700::1", "8.8.8.8"]})
    addresses = await resolve_checked(EgressPolicy(), "https://agent.example/", resolver)
    assert addresses == [ipaddress.ip_address("8.8.8.8"), ipaddress.ip_address("2606:4700::1")]


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://127.0.0.1:8080/", "127.0.0.1"),
        ("https://127.0.0.1/", "127.0.0.1"),
        ("http://127.0.0.2/", "127.0.0.2"),
        ("http://localhost/", "127.0.0.1"),
    ],
)
async def test_resolve_checked_allows_loopback_when_the_operator_allows_it(
    loopback_policy: EgressPolicy, url: str, address: str
) -> None:
    assert await resolve_checked(loopback_policy, url) == [ipaddress.ip_address(address)]


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://10.0.0.1/", "10.0.0.1 is a private address"),
        ("https://[::1]/", "::1 is a loopback address"),
        ("http://8.8.8.8/", _ONLY_HTTPS.format("8.8.8.8")),
        ("https://169.254.169.254/", "169.254.169.254 is a link-local address"),
    ],
)
async def test_an_allowed_range_opens_nothing_else(
    loopback_policy: EgressPolicy, network: NetworkGuard, url: str, why: str
) -> None:
    async with EgressClient(loopback_policy) as client:
        result = await client.request("GET", url, user_agent=USER_AGENT, deadline=2.0)
    assert result.reason == REFUSED + why
    assert network.connects == []


async def test_client_calls_loopback_over_http_when_allowed(client: EgressClient) -> None:
    async with serve(json_reply({"hello": "world"})) as endpoint:
        result = await client.request("GET", endpoint.url(), user_agent=USER_AGENT, deadline=2.0)
    assert result.ok
    assert result.data == {"hello": "world"}
    assert len(endpoint.received) == 1


async def test_each_client_judges_a_url_under_its_own_policy(
    client: EgressClient, strict_client: EgressClient, network: NetworkGuard
) -> None:
    """A URL one client may call stays refused for a client with a stricter policy."""
    async with serve(json_reply({})) as endpoint:
        for _ in range(2):
            allowed = await client.request(
                "GET", endpoint.url(), user_agent=USER_AGENT, deadline=2.0
            )
            refused = await strict_client.request(
                "GET", endpoint.url(), user_agent=USER_AGENT, deadline=2.0
            )
            assert allowed.ok
            assert refused.reason == REFUSED + _LOOPBACK
    assert len(endpoint.received) == 2


async def test_plain_http_to_a_name_with_a_public_address_is_refused(
    loopback_policy: EgressPolicy, network: NetworkGuard
) -> None:
    """http is judged on the resolved addresses too, not only on literal hosts."""
    resolver = ScriptedResolver({"agent.example": ["8.8.8.8"]})
    async with EgressClient(loopback_policy, resolver=resolver, reveal_addresses=True) as client:
        result = await client.request(
            "GET", "http://agent.example/", user_agent=USER_AGENT, deadline=2.0
        )
    assert result.reason == REFUSED + _ONLY_HTTPS.format("8.8.8.8")
    async with EgressClient(loopback_policy, resolver=resolver) as client:
        result = await client.request(
            "GET", "http://agent.example/", user_agent=USER_AGENT, deadline=2.0
        )
    assert result.reason == REFUSED + _ONLY_HTTPS.format("agent.example")  # the platform's
    assert network.connects == []


# DNS rebinding: every connection is judged on the address it actually uses.


async def test_rebinding_to_a_refused_address_is_caught_on_the_next_connection(
    network: NetworkGuard,
) -> None:
    policy = EgressPolicy.allowing(["127.0.0.1/32"])
    resolver = ScriptedResolver().then("agent.test", [LOOPBACK], ["127.0.0.2"])
    async with (
        serve(json_reply({"n": 1})) as endpoint,
        EgressClient(policy, resolver=resolver, keepalive=False, reveal_addresses=True) as client,
    ):
        url = endpoint.url("/task", host="agent.test")
        first = await client.request("GET", url, user_agent=USER_AGENT, deadline=2.0)
        second = await client.request("GET", url, user_agent=USER_AGENT, deadline=2.0)
    assert first.ok
    assert first.data == {"n": 1}
    assert second.reason == REFUSED + "127.0.0.2 is a loopback address"
    assert resolver.calls == ["agent.test", "agent.test"]
    assert network.connects == [(LOOPBACK, endpoint.port)]
    assert len(endpoint.received) == 1


async def test_rebinding_to_a_private_address_is_caught(network: NetworkGuard) -> None:
    policy = EgressPolicy.allowing(["127.0.0.1/32"])
    resolver = ScriptedResolver().then("agent.test", [LOOPBACK], ["10.0.0.1"])
    async with (
        serve(json_reply({})) as endpoint,
        EgressClient(policy, resolver=resolver, keepalive=False, reveal_addresses=True) as client,
    ):
        url = endpoint.url(host="agent.test")
        first = await client.request("GET", url, user_agent=USER_AGENT, deadline=2.0)
        second = await client.request("GET", url, user_agent=USER_AGENT, deadline=2.0)
    assert first.ok
    assert second.reason == REFUSED + "10.0.0.1 is a private address"
    assert network.connects == [(LOOPBACK, endpoint.port)]


async def test_a_mix_of_allowed_and_refused_addresses_is_refused_entirely(
    network: NetworkGuard,
) -> None:
    policy = EgressPolicy.allowing(["127.0.0.1/32"])
    resolver = ScriptedResolver({"agent.test": [LOOPBACK, "127.0.0.2"]})
    async with (
        serve(json_reply({})) as endpoint,
        EgressClient(policy, resolver=resolver, keepalive=False, reveal_addresses=True) as client,
    ):
        result = await client.request(
            "GET", endpoint.url(host="agent.test"), user_agent=USER_AGENT, deadline=2.0
        )
    assert result.reason == REFUSED + "127.0.0.2 is a loopback address"
    assert network.connects == []
    assert endpoint.received == []


# The guard these tests rely on.


def test_the_network_guard_blocks_before_connecting(network: NetworkGuard) -> None:
    assert "connect" in vars(socket.socket)  # installed: the real connect is never reached
    with socket.socket() as sock, pytest.raises(PermissionError):
        sock.connect(("192.0.2.1", 9))
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("example.com", 443)
    assert network.violations == ["connect to 192.0.2.1:9", "lookup of 'example.com'"]
    network.violations.clear()
