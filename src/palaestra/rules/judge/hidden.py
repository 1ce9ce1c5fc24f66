"""The judge's views of text hidden in invisible characters.

A reply can carry text a reader of the page never sees: ASCII smuggled as Unicode *tag
characters* (``U+E0020``-``U+E007E``, one per ASCII character), bytes smuggled as
*variation selectors* after a visible character (byte ``b`` as ``U+FE00 + b`` for ``b`` below
16, ``U+E0100 + b - 16`` above: the "emoji smuggling" trick), and bytes written in binary
with two *zero-width characters* (``U+200B`` and ``U+200C``, say) as the bits. Each view
collects the invisible characters of its kind, in order, whatever visible text lies between
them, and reads them back. A text without such characters is out in one search. Pure: no I/O.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Final

from palaestra.rules.judge.runs import printable_runs

__all__ = ["VIEWS", "tag_characters", "variation_selectors", "zero_width_binary"]


_TAGS: Final = re.compile("[\U000e0000-\U000e007f]+")
_TAG_TABLE: Final = {
    code: chr(code - 0xE0000) if 0xE0020 <= code <= 0xE007E else "\n"
    for code in range(0xE0000, 0xE0080)
}


def tag_characters(text: str) -> str | None:
    """Unicode tag characters read as the ASCII they mirror (``U+E0051`` reads ``Q``); the
    language and cancel tags, which carry no character, end a line."""
    if text.isascii():
        return None
    runs = _TAGS.findall(text)
    if not runs:
        return None
    read = "".join(runs).translate(_TAG_TABLE)
    return read if read.strip() else None


_SELECTORS: Final = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]+")


_DATA_SELECTOR: Final = re.compile("[\ufe00-\ufe0d\U000e0100-\U000e01ef]")
_SELECTOR_TABLE: Final = {
    **{0xFE00 + b: chr(b) for b in range(16)},
    **{0xE0100 + b: chr(b + 16) for b in range(240)},
}


def variation_selectors(text: str) -> str | None:
    """Variation selectors read as bytes (``U+FE00``-``U+FE0F`` as 0-15, ``U+E0100``-``U+E01EF``
    as 16-255); the printable runs of those bytes. An emoji's own selector (``U+FE0F``, 15)
    reads as a control byte and breaks no run of text into one."""
    # Bytes as selectors hold more than the two an emoji takes (U+FE0E text, U+FE0F emoji).
    if text.isascii() or not _DATA_SELECTOR.search(text):
        return None
    runs = _SELECTORS.findall(text)
    if not runs or sum(map(len, runs)) < 4:
        return None
    raw = "".join(runs).translate(_SELECTOR_TABLE).encode("latin-1")
    return printable_runs(raw)


#: The characters that render as nothing, any two of which may stand for the bits.
_ZERO_WIDTH: Final = (
    "\u034f\u180e\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff"
)
_ZERO_WIDTH_RUNS: Final = re.compile(f"[{_ZERO_WIDTH}]+")
_DROP_ZERO_WIDTH: Final[dict[int, str | None]] = dict.fromkeys(map(ord, _ZERO_WIDTH))
#: At least this many zero-width characters (four bytes' worth) before they are read as bits.
_MIN_BITS: Final = 32
#: At most this many bits are read (8 KiB of hidden text): a budget, not a clock.
_MAX_BITS: Final = 65_536


def _bit_readings(stream: str, zero: str, one: str) -> list[str]:
    """``stream`` with ``zero`` and ``one`` as the bits (other characters dropped), either
    way round, read most-significant bit first and last, as bytes: the printable runs of
    each."""
    bits = stream.translate(_DROP_ZERO_WIDTH | {ord(zero): "0", ord(one): "1"})
    runs: list[str] = []
    whole = len(bits) - len(bits) % 8
    if not whole:
        return runs
    raw = int(bits[:whole], 2).to_bytes(whole // 8, "big")
    # Most-significant bit first or last; and each of those with the bits swapped (the two
    # characters the other way round).
    reversed_bits = raw.translate(_REVERSED_BITS)
    for read in (raw, reversed_bits, raw.translate(_INVERTED), reversed_bits.translate(_INVERTED)):
        if (run := printable_runs(read)) is not None:
            runs.append(run)
    return runs


_REVERSED_BITS: Final = bytes(int(f"{b:08b}"[::-1], 2) for b in range(256))
_INVERTED: Final = bytes(255 - b for b in range(256))


def _split_readings(stream: str, separator: str) -> list[str]:
    """``stream`` cut at ``separator``, each piece one character in binary (seven or eight
    bits, either other character as the one)."""
    pieces = [p for p in stream.split(separator) if p]
    others = sorted(set("".join(pieces)))
    if len(others) != 2 or len(pieces) < 4 or any(len(p) > 8 for p in pieces):
        return []
    runs: list[str] = []
    for zero, one in itertools.permutations(others):
        table = {ord(zero): "0", ord(one): "1"}
        raw = bytes(int(p.translate(table), 2) for p in pieces)
        if (run := printable_runs(raw)) is not None:
            runs.append(run)
    return runs


def zero_width_binary(text: str) -> str | None:
    """Zero-width characters read as bits: any two of them as 0 and 1 (either way round),
    eight bits a byte, most- or least-significant bit first; or, with a third one between
    characters, each piece one character in binary. The printable runs of what they say."""
    if text.isascii():
        return None
    runs = _ZERO_WIDTH_RUNS.findall(text)
    stream = "".join(runs)[:_MAX_BITS]
    if len(stream) < _MIN_BITS:
        return None
    counts = {c: stream.count(c) for c in set(stream)}
    used = sorted(c for c, n in counts.items() if n >= 4)
    read: list[str] = []
    for zero, one in itertools.combinations(used, 2):
        read += _bit_readings(stream, zero, one)
    if len(used) == 3:
        for separator in used:
            read += _split_readings("".join(c for c in stream if c in used), separator)
    return "\n".join(dict.fromkeys(read)) if read else None


#: Every view of hidden characters, by name, in the order the judge tries them.
VIEWS: Final[tuple[tuple[str, Callable[[str], str | None]], ...]] = (
    ("tag-characters", tag_characters),
    ("variation-selectors", variation_selectors),
    ("zero-width-binary", zero_width_binary),
)
