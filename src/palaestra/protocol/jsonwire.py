"""JSON on the wire: fast parsing with the error lines agents already know.

Agents built for edgearena-v1 were debugged against a JavaScript platform, whose
``JSON.parse`` failures read ``Unexpected token '<' in JSON at position 0`` or
``Unexpected end of JSON input``. Palaestra reports malformed bodies the same way.

A UTF-8 byte order mark before the document is skipped, as the Fetch API's
``response.json()`` skips it (its UTF-8 decode drops a leading BOM), so an
agent whose framework writes one is read alike on the dispatch reply and the
completion callback.
"""

from __future__ import annotations

from typing import Any

import orjson

from palaestra.errors import ProtocolError

__all__ = ["InvalidJson", "dumps", "loads"]

_WHITESPACE = " \t\r\n"
_BOM = b"\xef\xbb\xbf"
_BOM_TEXT = "\ufeff"


class InvalidJson(ProtocolError):
    """Unexpected end of JSON input"""


def loads(raw: bytes | str) -> Any:
    """Parse a JSON document; raise :class:`InvalidJson` with a JavaScript-style message.

    One leading byte order mark is skipped; positions in messages count from after it."""
    if isinstance(raw, bytes):
        if raw.startswith(_BOM):
            raw = raw[len(_BOM) :]
    elif raw.startswith(_BOM_TEXT):
        raw = raw[len(_BOM_TEXT) :]
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        text = raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")
        raise InvalidJson(_describe(text, exc.pos, exc.msg)) from None


def dumps(value: Any) -> bytes:
    """Serialize to compact UTF-8 JSON bytes."""
    return orjson.dumps(value)


def _describe(text: str, pos: int, problem: str) -> str:
    # orjson's ``pos`` counts characters, not bytes.
    if "trailing comma" in problem:
        # JavaScript complains about the token after the comma, not the comma.
        pos += 1
        while pos < len(text) and text[pos] in _WHITESPACE:
            pos += 1
    if pos >= len(text) or "end of data" in problem or not text.strip(_WHITESPACE):
        return "Unexpected end of JSON input"
    return f"Unexpected token '{text[pos]}' in JSON at position {pos}"
