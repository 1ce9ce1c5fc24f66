"""Which destinations Palaestra may call: https to globally routable addresses only.

The policy is pure: it judges URLs and addresses. The client (``client.py``)
applies it on every connection, to the addresses it is about to connect to.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from yarl import URL

from palaestra.errors import EgressRefused
from palaestra.protocol.urls import url_problem, wire_url

__all__ = ["Address", "EgressPolicy", "Network", "parse_address", "parse_numeric_ipv4"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# IANA special-purpose ranges that are not globally routable, most specific first.
_SPECIAL_V4: Final[tuple[tuple[Network, str], ...]] = (
    (_V4("0.0.0.0/8"), "an unspecified ('this network') address"),
    (_V4("10.0.0.0/8"), "a private address"),
    (_V4("100.64.0.0/10"), "a shared (CGNAT) address"),
    (_V4("127.0.0.0/8"), "a loopback address"),
    (_V4("169.254.0.0/16"), "a link-local address"),
    (_V4("172.16.0.0/12"), "a private address"),
    (_V4("192.0.0.0/24"), "an IETF protocol assignment"),
    (_V4("192.0.2.0/24"), "a documentation address"),
    (_V4("192.88.99.0/24"), "a 6to4 relay anycast address"),
    (_V4("192.168.0.0/16"), "a private address"),
    (_V4("198.18.0.0/15"), "a benchmarking address"),
    (_V4("198.51.100.0/24"), "a documentation address"),
    (_V4("203.0.113.0/24"), "a documentation address"),
    (_V4("224.0.0.0/4"), "a multicast address"),
    (_V4("255.255.255.255/32"), "the broadcast address"),
    (_V4("240.0.0.0/4"), "a reserved address"),
)

_SPECIAL_V6: Final[tuple[tuple[Network, str], ...]] = (
    (_V6("::/128"), "the unspecified address"),
    (_V6("::1/128"), "a loopback address"),
    (_V6("64:ff9b:1::/48"), "a local-use NAT64 address"),
    (_V6("100::/64"), "a discard-only address"),
    (_V6("2001:db8::/32"), "a documentation address"),
    (_V6("2001::/23"), "an IETF protocol assignment"),
    (_V6("3fff::/20"), "a documentation address"),
    (_V6("5f00::/16"), "a segment-routing address"),
    (_V6("fc00::/7"), "a unique-local (private) address"),
    (_V6("fe80::/10"), "a link-local address"),
    (_V6("fec0::/10"), "a site-local address"),
    (_V6("ff00::/8"), "a multicast address"),
)
_GLOBAL_UNICAST: Final = _V6("2000::/3")
_UNSPECIFIED: Final = ipaddress.IPv4Address(0)
_HTTP_RANGES: Final = " (http is for ranges the operator allowed)"
_NAT64: Final = _V6("64:ff9b::/96")
_COMPATIBLE: Final = _V6("::/96")


def parse_numeric_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """Read ``host`` the way a URL parser reads IPv4: ``127.1``, ``0x7f.0.0.1``, ``2130706433``.

    Returns ``None`` when ``host`` is not numeric. Follows the WHATWG URL
    standard's IPv4 parser, which the C library's ``inet_aton`` also accepts.
    """
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    final = parts[-1]
    if not (final.isascii() and final.isdigit()) and _parse_ipv4_number(final) is None:
        return None  # a host name: its last label is not a number ("08" is one, and invalid)
    numbers = [_parse_ipv4_number(part) for part in parts]
    if len(numbers) > 4 or None in numbers:
        raise EgressRefused(f"{host} is not a valid IPv4 address")
    *head, last = (n for n in numbers if n is not None)
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        raise EgressRefused(f"{host} is not a valid IPv4 address")
    value = last
    for index, number in enumerate(head):
        value += number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def _parse_ipv4_number(part: str) -> int | None:
    if not part:
        return None
    base = 10
    if part[:2].lower() == "0x":
        part, base = part[2:], 16
    elif len(part) > 1 and part[0] == "0":
        part, base = part[1:], 8
    if part == "":
        return 0
    try:
        return int(part, base) if part.isalnum() and part.isascii() else None
    except ValueError:
        return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, str] | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped, "IPv4-mapped"
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF), "NAT64"
    if address.sixtofour is not None:
        return address.sixtofour, "6to4"
    if address in _COMPATIBLE:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF), "IPv4-compatible"
    return None


@dataclass(frozen=True)
class EgressPolicy:
    """The destinations Palaestra may call.

    ``allow`` lists ranges the operator opened, typically ``127.0.0.0/8`` for
    development. Addresses inside them are allowed, and plain ``http`` is
    allowed only when every address of the host lies inside them.
    """

    allow: tuple[Network, ...] = field(default=())

    @classmethod
    def allowing(cls, ranges: Iterable[str]) -> EgressPolicy:
        try:
            return cls(tuple(ipaddress.ip_network(r.strip(), strict=False) for r in ranges))
        except ValueError as exc:
            raise EgressRefused(f"invalid allowed range: {exc}") from exc

    def is_allowed_range(self, address: Address) -> bool:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address in network for network in self.allow)

    def refusal(self, address: Address) -> str | None:
        """Why ``address`` may not be called, or ``None`` when it may."""
        category = self.category(address)
        return None if category is None else f"{address} is {category}"

    def category(self, address: Address) -> str | None:
        """What kind of refused address this is (``"a loopback address"``), or ``None``."""
        if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
            address = ipaddress.IPv6Address(address.compressed.split("%")[0])
        if self.is_allowed_range(address):
            return None
        if isinstance(address, ipaddress.IPv4Address):
            return _special_category(address, _SPECIAL_V4) or _not_global(address)
        category = _special_category(address, _SPECIAL_V6)
        if category is not None:
            return category
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            inner, form = embedded
            inner_category = self.category(inner)
            if inner_category is not None:
                return f"the {form} form of {inner}, {inner_category}"
            return "a deprecated IPv4-compatible address" if form == "IPv4-compatible" else None
        if address not in _GLOBAL_UNICAST:
            return "not a global unicast address"
        return _not_global(address)

    def check_address(self, address: Address, *, plain_http: bool = False) -> None:
        """Raise :class:`EgressRefused` unless a connection to ``address`` is allowed."""
        why = self.refusal(address)
        if why is not None:
            raise EgressRefused(why)
        if plain_http:
            self.check_plain_http(address)

    def check_resolved(self, host: str, answer: str, *, plain_http: bool = False) -> Address:
        """:meth:`check_address` for an address the name ``host`` resolved to (``answer``, as
        the resolver gave it). A refusal names the host, not the address: where a name leads
        inside the platform's network is not for those who give it the name. The address is
        kept in the refusal's ``exact`` message."""
        try:
            address = parse_address(answer)
            self.check_address(address, plain_http=plain_http)
        except EgressRefused as exc:
            if plain_http and self.refusal(_literal_address(answer) or _UNSPECIFIED) is None:
                withheld = f"plain http to {host} is not allowed, only https{_HTTP_RANGES}"
            else:
                withheld = f"{host} resolves to an address the platform does not reach"
            raise EgressRefused(withheld, exact=exc.message) from None
        return address

    def check_url(self, url: URL) -> Address | None:
        """Check what can be checked without resolving; return the address of an IP host.

        Raises :class:`EgressRefused` for a scheme other than https (http only
        towards allowed ranges), credentials in the URL, a missing or malformed
        host, or an IP host the policy refuses.
        """
        scheme = url.scheme.lower()
        if scheme not in ("https", "http"):
            raise EgressRefused(f"scheme {scheme or '(none)'!r} is not allowed, only https")
        if url.raw_user is not None or url.raw_password is not None:
            raise EgressRefused("credentials in the URL are not allowed")
        host = url.raw_host
        if not host:
            raise EgressRefused("the URL has no host")
        address = _literal_address(host)
        if address is None:
            if ":" in host:
                # aiohttp takes any host with a colon for an address and skips the resolver.
                raise EgressRefused(f"{host} is not a valid IPv6 address")
            if scheme == "http" and not self.allow:
                raise EgressRefused("plain http is not allowed, only https")
            return None
        canonical = ":" in host or str(address) == host
        category = self.category(address)
        if category is not None:
            named = str(address) if canonical else f"{host} means {address},"
            raise EgressRefused(f"{named} {'is ' if canonical else ''}{category}")
        if not canonical:
            raise EgressRefused(f"{host} is a non-canonical spelling of {address}")
        if scheme == "http":
            self.check_plain_http(address)
        return address

    def target(self, url: str) -> URL:
        """``url`` as it is sent, once judged; :class:`EgressRefused` with the reason otherwise.

        What is sent is WHATWG's reading of ``url``, the one it is signed over: yarl's own
        differs (``%7e``, ``|``, ``\\``, a space in the query), so it is handed over encoded.
        The policy judges both the URL as written, whose spelling its refusals name, and the
        URL as sent, whose host is the one connected to. Never raises anything else, whatever
        ``url`` holds.
        """
        written: URL | None = None
        unread: ValueError | None = None
        try:
            written = URL(url)
        except ValueError as exc:  # UnicodeError included
            unread = exc
        else:
            self.check_url(written)
        problem = url_problem(url)
        if problem is not None:
            raise EgressRefused(f"invalid URL {url!r}: {problem}")
        if written is None:  # a browser reads it, yarl does not: its credentials go unchecked
            raise EgressRefused(f"invalid URL {url!r}: {unread}")
        try:
            sent = URL(wire_url(url).href, encoded=True)
        except ValueError as exc:
            raise EgressRefused(f"invalid URL {url!r}: {exc}") from exc
        self.check_url(sent)
        return sent

    def check_plain_http(self, address: Address) -> None:
        if not self.is_allowed_range(address):
            raise EgressRefused(f"plain http to {address} is not allowed, only https{_HTTP_RANGES}")


def _special_category(address: Address, table: tuple[tuple[Network, str], ...]) -> str | None:
    for network, name in table:
        if address in network:
            return name
    return None


def _not_global(address: Address) -> str | None:
    return None if address.is_global else "not globally routable"


def _literal_address(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    return parse_numeric_ipv4(host.rstrip("."))


def parse_address(text: str) -> Address:
    """An address as a resolver returns it; anything else is refused."""
    address = _literal_address(text)
    if address is None:
        raise EgressRefused(f"the resolver returned a non-address: {text!r}")
    return address
