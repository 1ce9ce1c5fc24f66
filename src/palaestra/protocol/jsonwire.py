"""JSON on the wire: fast parsing with the error lines agents already know.

Agents built for edgearena-v1 were debugged against a JavaScript platform, whose
``JSON.parse`` failures read ``Unexpected token '<' in JSON at position 0`` or
``Unexpected end of JSON input``. Palaestra reports malformed bodies the same way.
"""

from __future__ import annotations

from typing import Any

import orjson

from palaestra.errors import ProtocolError

__all__ = ["InvalidJson", "dumps", "loads"]

_WHITESPACE = b" \t\r\n"


class InvalidJson(ProtocolError):
    """Unexpected end of JSON input"""


def loads(raw: bytes | str) -> Any:
    """Parse a JSON document; raise :class:`InvalidJson` with a JavaScript-style message."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        data = raw.encode() if isinstance(raw, str) else raw
        raise InvalidJson(_describe(data, exc.pos, exc.msg)) from None


def dumps(value: Any) -> bytes:
    """Serialize to compact UTF-8 JSON bytes."""
    return orjson.dumps(value)


def _describe(data: bytes, pos: int, problem: str) -> str:
    if "trailing comma" in problem:
        # JavaScript complains about the token after the comma, not the comma.
        pos += 1
        while pos < len(data) and data[pos] in _WHITESPACE:
            pos += 1
    if pos >= len(data) or "end of data" in problem or not data.strip(_WHITESPACE):
        return "Unexpected end of JSON input"
    prefix = data[:pos].decode("utf-8", errors="replace")
    rest = data[pos:].decode("utf-8", errors="replace")
    token = rest[0] if rest else ""
    return f"Unexpected token '{token}' in JSON at position {len(prefix)}"
