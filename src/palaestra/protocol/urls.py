"""URLs as the WHATWG URL standard reads them, the way JavaScript's ``new URL()`` does.

Agents of edgearena-v1 were written against a JavaScript platform: they rebuild
the signed ``host+pathname`` from the request they receive, and a browser-style
parser decided what that request looked like. The parsing is Ada's (the
``ada-url`` package), the parser Node.js runs for ``new URL()``: the host
lower-cased, an IDN in punycode, an IP address in its canonical spelling, the
default port dropped, dot segments removed, and the path and query
percent-encoded. The platform sends exactly :attr:`WireUrl.href`, and signs
:attr:`WireUrl.host` + :attr:`WireUrl.pathname`.

Two rules are ours. Only the special schemes with a host are taken (http, https,
ws, wss, ftp). And DNS lengths are enforced, which WHATWG does not do: no empty
label but the root's trailing dot, none over 63 characters, at most 253 in all,
since such a name never resolves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ada_url import URL, HostType

from palaestra.errors import SignatureError

__all__ = ["WireUrl", "wire_url"]

_SCHEMES_WITH_A_HOST: Final = frozenset({"http:", "https:", "ws:", "wss:", "ftp:"})


@dataclass(frozen=True, slots=True)
class WireUrl:
    """A URL as sent, its parts serialized as a browser's ``URL`` object gives them."""

    host: str  # hostname, and the port when it is not the scheme's default: the Host header
    pathname: str
    href: str  # the whole URL without credentials or fragment: what the request is sent to


def wire_url(url: str) -> WireUrl:
    """Parse an absolute http(s) URL; raise :class:`SignatureError` when WHATWG would fail it."""
    try:
        parsed = URL(_as_javascript_string(url))
    except ValueError as exc:
        raise _invalid(url, "not a URL a browser would parse") from exc
    if parsed.protocol not in _SCHEMES_WITH_A_HOST:
        raise _invalid(url, "not an http(s) URL")
    if parsed.host_type == HostType.DEFAULT:
        _check_dns_lengths(url, parsed.hostname)
    del parsed.hash
    parsed.username = parsed.password = ""
    return WireUrl(parsed.host, parsed.pathname, parsed.href)


def _as_javascript_string(text: str) -> str:
    """``text`` as ``new URL()`` receives it: a lone surrogate read as U+FFFD."""
    if text.isascii():
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _check_dns_lengths(url: str, domain: str) -> None:
    name = domain[:-1] if domain.endswith(".") else domain
    if len(name) > 253:
        raise _invalid(url, "host name longer than 253 characters")
    for label in name.split("."):
        if not 0 < len(label) <= 63:
            raise _invalid(url, f"host label {label!r} is empty or longer than 63 characters")


def _invalid(url: str, why: str) -> SignatureError:
    return SignatureError(f"invalid URL {url!r}: {why}")
