"""The judge's ``html-tags`` view: markup tags removed, their contents kept.

A reply of random base 85 holds a ``<`` every few dozen characters, and the pattern of a
tag, tried at each, read on to the next ``<`` or ``>``: 3 ms at 256 KiB. A long text of
ASCII has its tags found from arrays instead, from where its ``<`` and ``>`` are. Pure:
no I/O.
"""

from __future__ import annotations

import re
from typing import Final

import numpy as np

__all__ = ["html_tags"]

_TAG: Final = re.compile(r"<!--|-->|<[A-Za-z/!?][^<>]*>")
#: Past this many characters, a text of ASCII has its tags found from arrays.
_LONG: Final = 4096
#: The characters that may follow a tag's ``<``.
_TAG_START: Final = np.array([bool(re.fullmatch(r"[A-Za-z/!?]", chr(b))) for b in range(256)])


def html_tags(text: str) -> str | None:
    """Markup tags removed, their contents kept: ``<b>QUI</b>LL`` reads ``QUILL``."""
    if "<" not in text:
        return None
    long = len(text) > _LONG and text.isascii()
    stripped = _untagged(text) if long else _TAG.sub("", text)
    return stripped if stripped != text else None


def _untagged(text: str) -> str:
    """``_TAG.sub("", text)`` of a text of ASCII, from arrays.

    At a ``<``, the pattern takes ``<!--`` if it stands there, else a tag: a character
    that may start one, then the rest up to the next ``<`` or ``>``, which must be a
    ``>``. Neither holds a ``<`` past its first character, so they never overlap; a
    ``-->`` holds none either, and is taken unless it starts inside one of them (the
    pattern read past it)."""
    chars = np.frombuffer(text.encode("ascii"), np.uint8)
    padded = np.append(chars, np.zeros(3, np.uint8))  # what a place three past the end reads
    opening = chars == ord("<")
    opens = np.flatnonzero(opening)
    angles = np.flatnonzero(opening | (chars == ord(">")))
    following = np.searchsorted(angles, opens, "right")  # the next < or > after each
    closes = np.append(angles, len(chars))[following]
    comment = ((padded[opens + 1] == ord("!")) & (padded[opens + 2] == ord("-"))) & (
        padded[opens + 3] == ord("-")
    )
    tag = ~comment & _TAG_START[padded[opens + 1]] & (padded[closes] == ord(">"))
    # The matches at the < in order, each a comment's opening or a tag.
    taken = comment | tag
    starts = opens[taken]
    ends = np.where(comment, opens + 4, closes + 1)[taken]
    arrows = np.flatnonzero(
        (chars[:-2] == ord("-")) & (chars[1:-1] == ord("-")) & (chars[2:] == ord(">"))
    )
    if len(arrows):
        # An arrow inside a comment or a tag is read past: the last of them to start at or
        # before it ends after it.
        before = np.searchsorted(starts, arrows, "right") - 1
        inside = before >= 0
        inside[inside] = ends[before[inside]] > arrows[inside]
        starts = np.concatenate((starts, arrows[~inside]))
        ends = np.concatenate((ends, arrows[~inside] + 3))
    # Inside a match from its start to its end, read off a running sum of where matches
    # start and end (no two share a start, nor an end; in 32 bits, where a sum of bytes
    # took five times longer).
    edges = np.zeros(len(chars) + 1, np.int32)
    edges[starts] += 1
    edges[ends] -= 1
    kept = np.cumsum(edges[:-1], dtype=np.int32) == 0
    stripped: bytes = chars[kept].tobytes()
    return stripped.decode("ascii")
