"""URLs as the WHATWG URL standard reads them, the way JavaScript's ``new URL()`` does.

Agents of edgearena-v1 were written against a JavaScript platform: they rebuild
the signed ``host+pathname`` from the request they receive, and a browser-style
parser decided what that request looked like. :func:`wire_url` is that parser,
for absolute URLs of the special schemes with a host (http, https, ws, wss,
ftp): the host lower-cased, an IDN in punycode, an IP address in its canonical
spelling, the default port dropped, dot segments removed, and the path and
query percent-encoded with the standard's sets (``^`` included in the path's,
as the standard has it since 2025; Node 20 still leaves it alone). The platform
sends exactly :attr:`WireUrl.href`, and signs :attr:`WireUrl.host` +
:attr:`WireUrl.pathname`.

Host names go through UTS #46 (non-transitional, as WHATWG asks) with the
``idna`` package; a label that package refuses but IDNA 2003 accepts (an emoji,
an underscore beside non-ASCII) falls back to the standard library's ``idna``
codec, as yarl does. An ASCII ``xn--`` label is taken as written, not decoded
and checked. One rule is stricter than WHATWG, on purpose: DNS lengths are
enforced (no empty label but the root's trailing dot, none over 63 characters,
at most 253 in all), since such a name never resolves.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote_to_bytes

import idna

from palaestra.errors import SignatureError

__all__ = ["WireUrl", "wire_url"]

_DEFAULT_PORTS: Final = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}

_STRIPPED: Final = "".join(map(chr, range(0x21)))  # C0 controls and space, at both ends
_TAB_OR_NEWLINE: Final = re.compile("[\t\n\r]")
_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_AUTHORITY_END: Final = re.compile(r"[/\\?#]")
_SEPARATOR: Final = re.compile(r"[/\\]")
_PATH_ESCAPED: Final = re.compile('[\x00-\x20"#<>?^`{}\x7f-\U0010ffff]')
_QUERY_ESCAPED: Final = re.compile("[\x00-\x20\"#<>'\x7f-\U0010ffff]")
_FORBIDDEN_IN_DOMAIN: Final = re.compile(r"[\x00-\x20#%/:<>?@\[\\\]^|\x7f]")
_SINGLE_DOT: Final = frozenset({".", "%2e"})
_DOUBLE_DOT: Final = frozenset({"..", ".%2e", "%2e.", "%2e%2e"})
_DOT_SEGMENTS: Final = _SINGLE_DOT | _DOUBLE_DOT
_REPLACEMENT: Final = "\ufffd".encode()
_OCTAL: Final = frozenset("01234567")
_HEX: Final = frozenset("0123456789abcdefABCDEF")


@dataclass(frozen=True, slots=True)
class WireUrl:
    """A URL as sent: its parts serialized as a browser's ``URL`` object gives them."""

    scheme: str  # lower-case, without the colon
    hostname: str  # IPv6 in brackets
    port: int | None  # None for the scheme's default
    pathname: str
    query: str | None  # without the "?"; None when there is none (the fragment is never kept)

    @property
    def host(self) -> str:
        """``hostname`` with the port when it is not the default: the ``Host`` header."""
        return self.hostname if self.port is None else f"{self.hostname}:{self.port}"

    @property
    def href(self) -> str:
        """The whole URL, without the fragment: what the request is sent to."""
        query = "" if self.query is None else "?" + self.query
        return f"{self.scheme}://{self.host}{self.pathname}{query}"


def wire_url(url: str) -> WireUrl:
    """Parse an absolute http(s) URL; raise :class:`SignatureError` when WHATWG would fail it."""
    text = _TAB_OR_NEWLINE.sub("", url.strip(_STRIPPED))
    scheme = _SCHEME.match(text)
    name = scheme.group()[:-1].lower() if scheme else ""
    default_port = _DEFAULT_PORTS.get(name)
    if scheme is None or default_port is None:
        raise _invalid(url, "not an http(s) URL")
    rest = text[scheme.end() :].lstrip("/\\")
    end = _AUTHORITY_END.search(rest)
    split = len(rest) if end is None else end.start()
    authority, rest = rest[:split], rest[split:]
    hostname, port = _host_and_port(url, authority.rpartition("@")[2], default_port)
    rest = rest.partition("#")[0]
    path, question, query = rest.partition("?")
    return WireUrl(
        name,
        hostname,
        port,
        _pathname(path),
        _escape(_QUERY_ESCAPED, query) if question else None,
    )


def _host_and_port(url: str, authority: str, default_port: int) -> tuple[str, int | None]:
    colon = authority.find(":", authority.rfind("]") + 1)
    host, port_text = (authority, "") if colon < 0 else (authority[:colon], authority[colon + 1 :])
    if not host:
        raise _invalid(url, "no host")
    port: int | None = None
    if port_text:
        if not (port_text.isascii() and port_text.isdigit()) or int(port_text) > 0xFFFF:
            raise _invalid(url, f"invalid port {port_text!r}")
        port = int(port_text)
    return _hostname(url, host), None if port == default_port else port


def _hostname(url: str, host: str) -> str:
    if host.startswith("["):
        if not host.endswith("]"):
            raise _invalid(url, f"invalid IPv6 address {host!r}")
        return f"[{_ipv6(url, host[1:-1])}]"
    if "%" in host:
        host = unquote_to_bytes(host).decode("utf-8", errors="replace")
    domain = _domain_to_ascii(url, host)
    if _FORBIDDEN_IN_DOMAIN.search(domain):
        raise _invalid(url, f"forbidden character in host {host!r}")
    if _ends_in_a_number(domain):
        return _ipv4(url, domain)
    _check_dns_lengths(url, domain)
    return domain


def _domain_to_ascii(url: str, domain: str) -> str:
    if domain.isascii():
        labels = domain.lower().split(".")
    else:
        with contextlib.suppress(UnicodeError):  # a refused code point: IDNA 2003 may take it
            domain = idna.uts46_remap(domain, std3_rules=False, transitional=False)
        labels = [_label_to_ascii(url, label) for label in domain.split(".")]
    return ".".join(labels)


def _label_to_ascii(url: str, label: str) -> str:
    if label.isascii():
        return label.lower()
    try:
        return idna.alabel(label).decode("ascii")
    except UnicodeError:
        pass
    try:
        return label.encode("idna").decode("ascii").lower()
    except UnicodeError as exc:
        raise _invalid(url, f"invalid host label {label!r}") from exc


def _check_dns_lengths(url: str, domain: str) -> None:
    name = domain[:-1] if domain.endswith(".") else domain
    if len(name) > 253:
        raise _invalid(url, "host name longer than 253 characters")
    for label in name.split("."):
        if not 0 < len(label) <= 63:
            raise _invalid(url, f"host label {label!r} is empty or longer than 63 characters")


def _ends_in_a_number(domain: str) -> bool:
    labels = domain.split(".")
    if labels[-1] == "" and len(labels) > 1:
        labels.pop()
    last = labels[-1]
    return (last != "" and last.isdigit()) or (last[:2] == "0x" and _ipv4_number(last) is not None)


def _ipv4(url: str, domain: str) -> str:
    """WHATWG's IPv4 parser: ``127.1``, ``0x7f.0.0.1`` and ``2130706433`` are ``127.0.0.1``."""
    parts = domain.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    numbers = [_ipv4_number(part) for part in parts]
    if len(numbers) > 4 or None in numbers:
        raise _invalid(url, f"invalid IPv4 address {domain!r}")
    *head, last = (number for number in numbers if number is not None)
    if any(number > 255 for number in head) or last >= 256 ** (5 - len(numbers)):
        raise _invalid(url, f"invalid IPv4 address {domain!r}")
    value = last + sum(number << (8 * (3 - index)) for index, number in enumerate(head))
    return ".".join(str((value >> shift) & 0xFF) for shift in (24, 16, 8, 0))


def _ipv4_number(part: str) -> int | None:
    if not part:
        return None
    digits, base, allowed = part, 10, None
    if part[:2] == "0x":
        digits, base, allowed = part[2:], 16, _HEX
    elif len(part) > 1 and part[0] == "0":
        digits, base, allowed = part[1:], 8, _OCTAL
    if not digits:
        return 0
    if allowed is None:
        return int(digits) if digits.isdigit() else None
    return int(digits, base) if allowed.issuperset(digits) else None


def _ipv6(url: str, text: str) -> str:
    """WHATWG's IPv6 serializer: lower-case, no leading zeros, the first longest zero run
    of two or more pieces compressed, and never an embedded IPv4 in dotted form."""
    if "%" in text:
        raise _invalid(url, "an IPv6 zone is not allowed in a URL")
    try:
        value = int(ipaddress.IPv6Address(text))
    except ValueError as exc:
        raise _invalid(url, f"invalid IPv6 address {text!r}") from exc
    pieces = [(value >> (16 * (7 - index))) & 0xFFFF for index in range(8)]
    best_start, best_length, start = -1, 1, -1
    for index, piece in enumerate([*pieces, 1]):
        if piece == 0 and start < 0:
            start = index
        elif piece != 0 and start >= 0:
            if index - start > best_length:
                best_start, best_length = start, index - start
            start = -1
    hexes = [f"{piece:x}" for piece in pieces]
    if best_start < 0:
        return ":".join(hexes)
    head = ":".join(hexes[:best_start])
    tail = ":".join(hexes[best_start + best_length :])
    return f"{head}::{tail}"


def _pathname(path: str) -> str:
    """Dot segments removed and each segment percent-encoded; ``\\`` is a slash too."""
    if not path:
        return "/"
    segments = _SEPARATOR.split(path[1:])
    plain = len(segments) == 1 and not _PATH_ESCAPED.search(path)
    if plain and segments[0].lower() not in _DOT_SEGMENTS:
        return "/" + segments[0]  # the usual endpoint: one plain segment
    kept: list[str] = []
    last = len(segments) - 1
    for index, segment in enumerate(segments):
        lowered = segment.lower() if "." in segment or "%" in segment else segment
        if lowered in _DOUBLE_DOT:
            if kept:
                kept.pop()
            if index == last:
                kept.append("")
        elif lowered in _SINGLE_DOT:
            if index == last:
                kept.append("")
        else:
            kept.append(_escape(_PATH_ESCAPED, segment))
    return "".join("/" + segment for segment in kept)


def _escape(escaped: re.Pattern[str], text: str) -> str:
    def percent(match: re.Match[str]) -> str:
        try:
            octets = match.group().encode()
        except UnicodeEncodeError:  # a lone surrogate, which a JavaScript string reads as U+FFFD
            octets = _REPLACEMENT
        return "".join(f"%{octet:02X}" for octet in octets)

    return escaped.sub(percent, text)


def _invalid(url: str, why: str) -> SignatureError:
    return SignatureError(f"invalid URL {url!r}: {why}")
