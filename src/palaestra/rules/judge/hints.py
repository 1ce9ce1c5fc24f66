"""Whether a long text of ASCII holds what a view's pattern finds, told from arrays of
flags: the ``separators`` view's join of adjacent literals and its spaced-out characters
here, and the moves of flags the caesar view's test of its tokens shares (:func:`later`).

Both patterns start with a character a reply is full of (a separator, a quote), so a
search tries the rest of the pattern at each one: over 256 KiB of prose or JSON, tens of
thousands of tries and 10 to 25 ms a pattern, most often to find nothing. Here each
character's kind is looked up at once, and a few passes over the flags tell exactly
whether the pattern matches anywhere; the view runs the pattern itself only when it does.
A shorter text, or one with characters outside ASCII (whose whitespace and letters the
tables do not hold), is searched with the pattern. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Final

import numpy as np

__all__ = [
    "later",
    "literal_join_hint",
    "literal_joins_removed",
    "next_spaced_pair",
    "spaced_hint",
    "spaced_pairs",
]

#: Up to this many characters, the pattern is searched: arrays cost more to set up.
_SHORT: Final = 4096


def _flags(pattern: str) -> bytes:
    """For each ASCII character, whether ``pattern`` (one character) matches it, as a
    translation to the bytes of bools (a translation in C, where a lookup in an array of
    them converted every character to an index first: ten times longer)."""
    one = re.compile(pattern)
    return bytes(one.fullmatch(chr(c)) is not None for c in range(256))


def _each(text: bytes, flags: bytes) -> np.ndarray:
    return np.frombuffer(text.translate(flags), np.bool_)


_SEPARATOR: Final = _flags(r"[\s.\-_*|/]")
_WORD: Final = _flags(r"[^\W_]")
#: Each ASCII character's kind for the spaced-out hint: 1 a separator, 2 a letter or digit.
_SPACING: Final = bytes(
    separator | word << 1 for separator, word in zip(_SEPARATOR, _WORD, strict=True)
)
_SPACE: Final = _flags(r"\s")
_QUOTE: Final = _flags(r"[\"'`]")


def later(flags: np.ndarray, by: int) -> np.ndarray:
    """``flags`` moved ``by`` places on (negative: back): each place holds the flag of the
    one ``by`` before it, false where there is none."""
    out = np.zeros_like(flags)
    if by > 0:
        out[by:] = flags[:-by]
    elif by < 0:
        out[:by] = flags[-by:]
    else:
        out[:] = flags
    return out


@lru_cache(maxsize=2)
def _spacing(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Whether each place of a text of ASCII is a separator, and whether a letter or digit,
    and five places past its end of neither: the ``separators`` view's hint and then its
    pairs read both of one text (from one translation, each one of its bits)."""
    kinds = np.frombuffer((text.encode("ascii") + bytes(5)).translate(_SPACING), np.uint8)
    return (kinds & 1) != 0, (kinds & 2) != 0


def _spaced(text: str) -> bool:
    """Three single letters or digits, the first after a separator, one or two separators
    between each, no letter or digit after the last (``_SPACED_HINT``)."""
    separator, word = (flags[: len(text)] for flags in _spacing(text))
    single = word & later(separator, 1)  # a letter or digit after a separator
    middle = single & later(separator, -1)  # and before one
    last = single & ~later(word, -1)
    # A middle one two or three places after a first one (between them one separator,
    # or two: the first's after and the second's before), then a last one so after it.
    second = middle & (later(middle, 2) | later(middle, 3))
    return bool((last & (later(second, 2) | later(second, 3))).any())


def next_spaced_pair(text: str, pattern: re.Pattern[str]) -> Callable[[int], int | None]:
    """Where ``pattern`` (the ``separators`` view's pair of spaced-out characters) next
    matches in ``text`` from a place on: looked up among the places :func:`spaced_pairs`
    finds in a long text of ASCII, else searched for."""
    places = spaced_pairs(text)
    if places is None:
        return lambda at: None if (pair := pattern.search(text, at)) is None else pair.start()
    return lambda at: (
        None if (i := int(np.searchsorted(places, at))) == len(places) else int(places[i])
    )


def spaced_pairs(text: str) -> np.ndarray | None:
    """Where the ``separators`` view's pair of spaced-out characters
    (``_SPACED_PAIR``: a separator, a letter or digit, one or two separators, a letter or
    digit and no other after it) starts, in order, in a long text of ASCII; ``None`` for
    any other, which the pattern searches (tried at every separator, 3 ms on random
    Ascii85 for a hundred pairs)."""
    if len(text) <= _SHORT or not text.isascii():
        return None
    # Past the end, five places of neither: sep[k : n + k] says whether the place k places
    # on is a separator, alnum[k : n + k] whether it is a letter or digit.
    (sep, alnum), n = _spacing(text), len(text)
    single = sep[:n] & alnum[1 : n + 1] & sep[2 : n + 2]
    after_one = alnum[3 : n + 3] & ~alnum[4 : n + 4]
    after_two = sep[3 : n + 3] & alnum[4 : n + 4] & ~alnum[5 : n + 5]
    return np.flatnonzero(single & (after_one | after_two))


def _literal_join(text: str) -> bool:
    """A quote, then whitespace, maybe a ``+`` and whitespace, then the same quote
    (``_LITERAL_JOIN``), in a text of ASCII."""
    return bool(len(_literal_joins(text.encode("ascii"))[0]))


def _literal_joins(text: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Where ``_LITERAL_JOIN`` may match, by the quote it starts at: each such quote, in
    order, and the place of the same quote that would end it."""
    quotes = np.flatnonzero(_each(text, _QUOTE))
    if not len(quotes):
        return quotes, quotes
    padded = text + b"\0"  # past the end: no space, quote or plus
    chars, space = np.frombuffer(padded, np.uint8), _each(padded, _SPACE)
    after = quotes + 1
    if not (space[after].any() or (chars[after] == ord("+")).any()):
        then = after  # JSON: a quote, then a mark
    else:
        # The first character that is not whitespace at or after each place. (In 64 bits:
        # a running minimum of 32-bit numbers took four times longer, 1 ms at 256 KiB.)
        places = np.arange(len(padded), dtype=np.int64)
        places[space] = len(text)
        following = np.minimum.accumulate(places[::-1])[::-1]
        first = following[after]
        plus = chars[first] == ord("+")
        then = np.where(plus, following[np.minimum(first + 1, len(text))], first)
    joins = chars[then] == chars[quotes]
    return quotes[joins], then[joins]


def literal_joins_removed(pattern: re.Pattern[str]) -> Callable[[str], str]:
    """``pattern.sub("", text)`` for ``pattern`` the ``separators`` view's join of adjacent
    literals; in a long text of ASCII, from where it may match: a match holds no quote
    but its two, so one overlaps another only when it starts at the other's closing
    quote, and in a row of them so the pattern takes every other one, from the first
    (it was tried at every quote, thousands in random Ascii85: 1.5 ms)."""

    def removed(text: str) -> str:
        if len(text) <= _SHORT or not text.isascii():
            return pattern.sub("", text)
        starts, closes = _literal_joins(text.encode("ascii"))
        if not len(starts):
            return text
        count = len(starts)
        goes_on = np.zeros(count, bool)
        goes_on[1:] = starts[1:] == closes[:-1]
        first_of_row = np.maximum.accumulate(np.where(goes_on, 0, np.arange(count)))
        taken = (np.arange(count) - first_of_row) % 2 == 0
        edges = np.zeros(len(text) + 1, np.int32)
        edges[starts[taken]] += 1
        edges[closes[taken] + 1] -= 1
        kept = np.cumsum(edges[:-1], dtype=np.int32) == 0
        chars = np.frombuffer(text.encode("ascii"), np.uint8)
        joined: bytes = chars[kept].tobytes()
        return joined.decode("ascii")

    return removed


def _hint(pattern: re.Pattern[str], arrays: Callable[[str], bool]) -> Callable[[str], bool]:
    def matches(text: str) -> bool:
        if len(text) <= _SHORT or not text.isascii():
            return pattern.search(text) is not None
        return arrays(text)

    return matches


def spaced_hint(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    """Whether ``pattern`` (the ``separators`` view's hint of spaced-out characters)
    matches in a text."""
    return _hint(pattern, _spaced)


def literal_join_hint(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    """Whether ``pattern`` (the ``separators`` view's join of adjacent literals) matches
    in a text."""
    return _hint(pattern, _literal_join)
