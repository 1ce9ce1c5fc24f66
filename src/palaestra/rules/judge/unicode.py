"""Which pieces of base 64 may read as text outside ASCII, all at once with numpy.

The ``base64-unicode`` view (:mod:`palaestra.rules.judge.bytes`) reads base 64 whose bytes
are UTF-8 with characters outside ASCII, UTF-16 or UTF-32: a reply of random base 85 holds
thousands of tokens of base 64's alphabet, and a step of Python per token or piece cost
milliseconds. Here every token's sign and every piece's bytes are read at once, as the
decodings of many tokens are (:mod:`palaestra.rules.judge.tokens`). Pure: no I/O.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from palaestra.rules.judge.classes import CHAR_CLASSES
from palaestra.rules.judge.digits import GROUPS, b64_many
from palaestra.rules.judge.groups import groups_spans
from palaestra.rules.judge.tokens import _offsets, _signed
from palaestra.rules.judge.words import URLSAFE

__all__ = ["unicode_candidates", "unicode_pieces"]


#: The lead bytes of UTF-8 that may start a character ``judge_bytes`` reads as text
#: outside ASCII: U+0080 to U+027F, U+0340 to U+04FF, U+F000 to U+FFFF, U+10000 to U+3FFFF.
_READABLE_LEADS: Final = np.zeros(256, bool)
_READABLE_LEADS[[*range(0xC2, 0xCA), *range(0xCD, 0xD4), 0xEF, 0xF0]] = True


def unicode_candidates(pieces: list[str]) -> list[bool]:
    """Whether base 64 of each piece (its alphabet only, ``-`` and ``_`` read as ``+`` and
    ``/``) may read as text outside ASCII (``judge_bytes._unicode_readings``): a byte of
    0x80 or more with under one byte in eight that UTF-8 must replace (a continuation byte
    after an ASCII one, a lead byte with none after it, or a byte UTF-8 never holds: each
    reads as one U+FFFD), a quarter of zero bytes (UTF-16, UTF-32), or a byte order mark
    where that reading looks for one. All pieces at once: a call per piece cost 50 ms on
    random base 85. (A byte of 0xFE or 0xFF anywhere among the first eight, where only a
    mark counts, let one piece of random base 85 in fourteen through, and a lone lead byte
    was not counted: 1,063 of its 7,743 pieces were read, now 126, to readings that found
    nothing.)"""
    lengths = np.fromiter(map(len, pieces), np.int64, len(pieces))
    chars = np.frombuffer("".join(pieces).encode("ascii", "replace"), np.uint8)
    return _candidates(chars, np.cumsum(lengths) - lengths, lengths).tolist()  # type: ignore[no-any-return]


def unicode_pieces(tokens: list[str], signs: tuple[bytes, ...]) -> list[str]:
    """The pieces of base 64 tokens (of its alphabet, URL-safe or not) that
    ``judge_bytes.base64_unicode`` decodes: each token holding one of ``signs`` in its
    classes, whole when its length is a multiple of four, else from each of its first four
    offsets, the URL-safe digits read as the standard ones; only those
    :func:`unicode_candidates` lets through. Every token at once: a step of Python per
    token cost 4 ms on the thousands of random base 85."""
    if not tokens:
        return []
    lengths = np.fromiter(map(len, tokens), np.int64, len(tokens))
    joined = "".join(tokens).translate(URLSAFE)
    chars = np.frombuffer(joined.encode("ascii", "replace"), np.uint8)
    starts = np.cumsum(lengths) - lengths
    classes = np.frombuffer(joined.encode("ascii", "replace").translate(CHAR_CLASSES), np.uint8)
    signed = np.flatnonzero(_signed(classes, starts, signs))
    if not len(signed):
        return []
    which, offset = _offsets(np.where(lengths[signed] % 4 == 0, 1, 4))
    begins = starts[signed][which] + offset
    sizes = lengths[signed][which] - offset
    kept = np.flatnonzero(_candidates(chars, begins, sizes))
    bounds = zip(begins[kept].tolist(), (begins + sizes)[kept].tolist(), strict=True)
    return [joined[begin:end] for begin, end in bounds]


def _candidates(chars: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """:func:`unicode_candidates` of the pieces that are spans of ``chars``."""
    table, base, block, size = GROUPS[b64_many]
    pieces = len(lengths)
    count = lengths * 6 // 8  # the bytes of each piece
    groups = (lengths + (block - 1)) // block
    first = (np.cumsum(groups + 1) - (groups + 1)) * size
    digits = np.frombuffer(table, np.uint8)[chars]
    raw = np.frombuffer(groups_spans(digits, starts, lengths, base, block, size), np.uint8)
    at = np.cumsum(count) - count
    relative = np.arange(int(count.sum())) - np.repeat(at, count)
    data = raw[np.repeat(first, count) + relative]
    begins = relative == 0
    ascii_before = np.concatenate(([True], data[:-1] < 0x80)) | begins
    after = np.append(data[1:], 0)[: len(data)]  # the next byte, 0 past the last
    # Whether the next byte is a continuation byte of the same piece.
    continued = ((after & 0xC0) == 0x80) & ~np.append(begins[1:], True)[: len(data)]
    continuation = (data & 0xC0) == 0x80
    replaced = (continuation & ascii_before) | (data >= 0xF5) | (data == 0xC0) | (data == 0xC1)
    replaced |= (data >= 0xC2) & (data < 0xF5) & ~continued  # a lead byte left alone
    # A byte order mark: FF FE or FE FF first, or 00 00 FE FF within the first eight bytes.
    marks = begins & (((data == 0xFF) & (after == 0xFE)) | ((data == 0xFE) & (after == 0xFF)))
    utf32 = (data[:-3] == 0) & (data[1:-2] == 0) & (data[2:-1] == 0xFE) & (data[3:] == 0xFF)
    marks[: len(utf32)] |= utf32 & (relative[:-3] <= 4) & (relative[3:] == relative[:-3] + 3)
    some = np.flatnonzero(count)

    def per_piece(mask: np.ndarray) -> np.ndarray:
        sums = np.zeros(pieces, np.int64)
        if len(some):
            sums[some] = np.add.reduceat(mask, at[some], dtype=np.int64)
        return sums

    # A readable character outside ASCII in UTF-8 (U+00A0 to U+04FF, full-width forms,
    # mathematical letters) is a lead byte of these and a continuation byte after it.
    high = per_piece(_READABLE_LEADS[data] & continued) > 0
    candidate = (high & (8 * per_piece(replaced) < count)) | (4 * per_piece(data == 0) >= count)
    candidate |= per_piece(marks) > 0
    return candidate & (count > 0)
