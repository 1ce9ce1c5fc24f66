"""Host names as UTS #46 and the DNS take them, past what WHATWG's parser checks.

Ada maps and checks a host by UTS #46 with WHATWG's options, which leave out
two things a name must satisfy to be looked up at all: ``VerifyDnsLength`` (no
empty label but the root's trailing dot, none over 63 characters, at most 253
in all) and the validity of an A-label written out (``xn--a`` is taken as it
is, though it decodes to U+0080). :func:`host_name_problem` checks both on a
host Ada accepted, so a name that could never resolve is refused as written
rather than failing in the resolver (whose ``idna`` codec raises
``UnicodeError`` on it). :func:`unparsed_problem` says, in words that name the
part, why Ada refused a URL: its port, a character no host may hold, a label
UTS #46 does not allow (with the ``idna`` package's reason), a bad address.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote_to_bytes

import ada_url
import idna

__all__ = ["MAX_LABEL", "MAX_NAME", "host_name_problem", "unparsed_problem"]

MAX_LABEL: Final = 63
MAX_NAME: Final = 253
_A_LABEL: Final = "xn--"
_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_AUTHORITY_END: Final = re.compile(r"[/?#\\]")
#: The full stops UTS #46 maps to "." before splitting a name into labels.
_DOTS: Final = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})
#: WHATWG's forbidden domain code points, beside the C0 controls and DEL.
_FORBIDDEN: Final = frozenset(" #%/:<>?@[\\]^|")
_SHOWN: Final = 40  # characters of a long label quoted in a message


def host_name_problem(hostname: str) -> str | None:
    """Why the ASCII ``hostname`` (as Ada serializes it) is not a valid DNS name, or ``None``."""
    name = hostname[:-1] if hostname.endswith(".") else hostname
    if len(name) > MAX_NAME:
        return f"the host name is {len(name)} characters long, more than {MAX_NAME}"
    for label in name.split("."):
        if not label:
            return f"the host name {_quoted(hostname)} has an empty label"
        if len(label) > MAX_LABEL:
            return f"the host label {_quoted(label)} is {len(label)} characters long, more than 63"
        if label.startswith(_A_LABEL):
            problem = _a_label_problem(label)
            if problem is not None:
                return problem
    return None


def _a_label_problem(label: str) -> str | None:
    """An ``xn--`` label must be the punycode of a label UTS #46 allows, and its own form."""
    try:
        unicode = label[len(_A_LABEL) :].encode("ascii").decode("punycode")
    except (UnicodeError, ValueError, OverflowError):
        return f"the host label {_quoted(label)} is not valid punycode"
    if unicode.isascii():
        return f"the host label {_quoted(label)} is not an A-label: it spells no Unicode name"
    if ada_url.idna_to_ascii(unicode) != label.encode("ascii"):
        return (
            f"the host label {_quoted(label)} decodes to {_quoted(unicode)}, "
            f"which UTS #46 does not allow ({_idna_reason(unicode)})"
        )
    return None


def unparsed_problem(url: str) -> str:
    """Why a URL that Ada (a browser's parser) refused is refused, naming the part."""
    scheme, colon, rest = url.partition(":")
    if not colon or not _SCHEME.fullmatch(scheme):
        return "it is not an absolute URL (scheme://host/path)"
    authority = _AUTHORITY_END.split(rest.lstrip("/\\"), maxsplit=1)[0]
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        address, closed, after = hostport[1:].partition("]")
        if not closed:
            return "the IPv6 address has no closing ']'"
        if after and not after.startswith(":"):
            return f"{_quoted(after)} follows the IPv6 address"
        port_problem = _port_problem(after[1:])
        if port_problem is not None:
            return port_problem
        return f"[{address}] is not a valid IPv6 address"
    host, _, port = hostport.partition(":")
    return _port_problem(port) or _host_problem(host)


def _port_problem(port: str) -> str | None:
    if not port:
        return None
    if not (port.isascii() and port.isdigit()):
        return f"the port {_quoted(port)} is not a number"
    if int(port) > 65535:
        return f"the port {int(port)} is out of range (1-65535)"
    return None


def _host_problem(host: str) -> str:
    if not host:
        return "the URL has no host"
    decoded = unquote_to_bytes(host).decode("utf-8", errors="replace")
    for char in decoded:
        if char in _FORBIDDEN or ord(char) < 0x20 or char == "\x7f":
            return f"the host contains {_character(char)}, which no host name may"
    labels = decoded.translate(_DOTS).split(".")
    if labels and labels[-1] == "":
        labels.pop()
    if labels and _numeric(labels[-1]):
        return f"the host {_quoted(host)} is not a valid IPv4 address"
    for label in labels:
        if label and ada_url.idna_to_ascii(label) == b"":
            return (
                f"the host label {_quoted(label)} is not allowed by UTS #46 ({_idna_reason(label)})"
            )
    return "it is not a URL a browser would parse"


def _numeric(label: str) -> bool:
    """WHATWG reads a host whose last label is a number as an IPv4 address."""
    if label.isascii() and label.isdigit():
        return True
    if label[:2].lower() != "0x":
        return False
    try:
        int(label[2:] or "0", 16)
    except ValueError:
        return False
    return True


def _idna_reason(label: str) -> str:
    try:
        idna.encode(label, uts46=True, std3_rules=False, transitional=False)
    except (idna.IDNAError, UnicodeError, ValueError) as exc:
        return str(exc) or type(exc).__name__
    return "a code point it disallows"


def _character(char: str) -> str:
    return f"{char!r} (U+{ord(char):04X})"


def _quoted(text: str) -> str:
    if len(text) > _SHOWN + 10:
        text = text[:_SHOWN] + "…"
    return repr(text)
