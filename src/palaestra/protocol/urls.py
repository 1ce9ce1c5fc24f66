"""URLs as the WHATWG URL standard reads them, the way JavaScript's ``new URL()`` does.

Agents of edgearena-v1 were written against a JavaScript platform: they rebuild
the signed ``host+pathname`` from the request they receive, and a browser-style
parser decided what that request looked like. The parsing is Ada's (the
``ada-url`` package), the parser Node.js runs for ``new URL()``: the host
lower-cased, an IDN in punycode, an IP address in its canonical spelling, the
default port dropped, dot segments removed, and the path and query
percent-encoded. The platform sends exactly :attr:`WireUrl.href`, and signs
:attr:`WireUrl.host` + :attr:`WireUrl.pathname`.

Three rules are ours. Only the special schemes with a host are taken (http, https,
ws, wss, ftp). Port 0 is refused: nothing listens there. And a host name must
be one the DNS can look up (``hostnames``): no empty label but the root's
trailing dot, none over 63 characters, at most 253 in all, and an A-label only
when it decodes to a label UTS #46 allows. WHATWG checks none of these, and such
a name never resolves.

:func:`url_problem` says why a URL is refused, in words that name the part;
:func:`require_url` is the check at the boundary, where an owner gives a URL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ada_url import URL, HostType

from palaestra.errors import InvalidUrl, SignatureError

from .hostnames import host_name_problem, unparsed_problem

__all__ = ["WireUrl", "require_url", "url_problem", "wire_url"]

_SCHEMES_WITH_A_HOST: Final = frozenset({"http:", "https:", "ws:", "wss:", "ftp:"})


@dataclass(frozen=True, slots=True)
class WireUrl:
    """A URL as sent, its parts serialized as a browser's ``URL`` object gives them."""

    host: str  # hostname, and the port when it is not the scheme's default: the Host header
    pathname: str
    href: str  # the whole URL without credentials or fragment: what the request is sent to


def wire_url(url: str) -> WireUrl:
    """Parse an absolute http(s) URL; raise :class:`SignatureError` when it is refused."""
    parsed = _parse(url)
    if isinstance(parsed, str):
        raise SignatureError(f"invalid URL {url!r}: {parsed}")
    del parsed.hash
    parsed.username = parsed.password = ""
    return WireUrl(parsed.host, parsed.pathname, parsed.href)


def url_problem(url: str) -> str | None:
    """Why ``url`` is refused (``"the port 99999 is out of range (1-65535)"``), or ``None``."""
    parsed = _parse(url)
    return parsed if isinstance(parsed, str) else None


def require_url(field: str, url: str) -> str:
    """``url`` stripped, or :class:`InvalidUrl` naming ``field`` and the problem."""
    url = url.strip()
    problem = url_problem(url)
    if problem is not None:
        raise InvalidUrl(f"{field} is not a valid URL: {problem}")
    return url


def _parse(url: str) -> URL | str:
    """Ada's reading of ``url``, or why it is refused."""
    text = _as_javascript_string(url)
    try:
        parsed = URL(text)
    except ValueError:
        return unparsed_problem(text)
    if parsed.protocol not in _SCHEMES_WITH_A_HOST:
        return "not an http(s) URL"
    if parsed.port == "0":
        return "port 0 is not a port a server listens on"
    if parsed.host_type == HostType.DEFAULT:
        problem = host_name_problem(parsed.hostname)
        if problem is not None:
            return problem
    return parsed


def _as_javascript_string(text: str) -> str:
    """``text`` as ``new URL()`` receives it: a lone surrogate read as U+FFFD."""
    if text.isascii():
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
