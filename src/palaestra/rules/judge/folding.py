"""A view's text folded as the judge compares it, and the lines of a view that show a finding.

Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Final

from palaestra.rules.judge.match import Rule, Seen, fold_view

__all__ = ["fold", "lines_showing"]

_NON_ALNUM: Final = re.compile(r"[^a-z0-9]+")


def fold(text: str) -> str:
    """``text`` folded (``rules.judge.match``), with only ASCII letters and digits kept."""
    return _NON_ALNUM.sub("", fold_view(text))


def lines_showing(read: str, seen: Seen) -> str:
    """The lines of a view that hold what was seen: a decoding's other lines are noise."""
    parts = (seen.needle.joined,) if seen.rule is Rule.WHOLE else seen.parts
    wanted = tuple(part.encode() for part in parts)
    lines = read.splitlines()
    kept = [
        line
        for line, folded in zip(lines, _folded_lines(read, lines), strict=False)
        if any(part in folded for part in wanted)
    ]
    return "\n".join(kept) if kept else read


#: The line breaks of ASCII (``str.splitlines``), each read as ``\n``, capitals lower-cased;
#: and every other character but a letter or a digit, deleted: :func:`fold` of each line.
_LETTERS: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_FOLD_LINES: Final = bytes.maketrans(b"\r\v\f\x1c\x1d\x1e" + _LETTERS, b"\n" * 6 + _LETTERS.lower())
_KEPT_IN_LINES: Final = frozenset(b"\n\r\v\f\x1c\x1d\x1e0123456789" + _LETTERS + _LETTERS.lower())
_NOT_FOLDED: Final = bytes(c for c in range(256) if c not in _KEPT_IN_LINES)


def _folded_lines(read: str, lines: list[str]) -> list[bytes]:
    """:func:`fold` of each of ``lines`` (``read.splitlines()``); of an ASCII text, in two C
    passes over it (a call per line cost tens of milliseconds on a long decoding)."""
    if not read.isascii():
        return [fold(line).encode() for line in lines]
    # A break of two characters is one; ``split`` may add an empty last line, never read.
    raw = read.replace("\r\n", "\n").encode("ascii")
    return raw.translate(_FOLD_LINES, _NOT_FOLDED).split(b"\n")
