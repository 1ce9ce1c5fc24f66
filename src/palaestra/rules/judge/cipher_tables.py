"""The tables the Caesar and Atbash views read a token by (:mod:`.ciphered`): the ciphers,
the encodings of text they are tried over (base64, base32, hex) and, for each place of an
encoding's block, which characters the encoding of printable text has there, as a pattern
(:func:`_shape`), as bits for many tokens at once (:func:`_shape_bits`) and as each
character's mask of the ciphers under which it fits (:func:`_masks`). Made once. Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Final

import numpy as np

__all__ = ["CIPHER_NAMES"]

_LOWER: Final = string.ascii_lowercase
_UPPER: Final = string.ascii_uppercase
#: The ciphers tried, by index in a mask: the 25 Caesar shifts (``rot13-text`` reads a
#: whole reply in ROT13, this a token broken up, as hex in pairs), then Atbash.
_SHIFTS: Final = tuple(range(1, 26))
CIPHER_NAMES: Final = (*(f"caesar-{n}" for n in _SHIFTS), "atbash")
_ATBASH: Final = len(_SHIFTS)
_ALL: Final = (1 << len(CIPHER_NAMES)) - 1
_CAESARS: Final = _ALL & ~(1 << _ATBASH)


def _undo_table(index: int) -> dict[int, int]:
    """The table that reads cipher ``index`` back (a shift of ``n`` undone by ``26 - n``)."""
    if index == _ATBASH:
        return str.maketrans(_LOWER + _UPPER, _LOWER[::-1] + _UPPER[::-1])
    n = 26 - _SHIFTS[index]
    return str.maketrans(_LOWER + _UPPER, _LOWER[n:] + _LOWER[:n] + _UPPER[n:] + _UPPER[:n])


_UNDO: Final = tuple(_undo_table(index) for index in range(len(CIPHER_NAMES)))
_PRINTABLE: Final = range(0x20, 0x7F)
_TOKEN_CHARS: Final = string.ascii_letters + string.digits + "+/"


@dataclass(frozen=True, slots=True)
class _Encoding:
    """An encoding as a block of characters for a block of bytes, each character standing
    for ``bits`` bits of the bytes, most significant first."""

    name: str
    alphabet: str
    bits: int
    block: int  # characters per block
    decode: Callable[[str], bytes]  # whole blocks
    folded: bool = False  # either case reads the same (hex, base32)

    def values(self, position: int) -> set[int]:
        """The values the character at ``position`` of a block takes when the bytes are
        printable ASCII."""
        start = position * self.bits % 8  # where in its first byte the character starts
        if start + self.bits <= 8:
            return {byte >> (8 - start - self.bits) & ((1 << self.bits) - 1) for byte in _PRINTABLE}
        from_first = 8 - start  # the character's bits in the first byte; the rest in the next
        from_next = self.bits - from_first
        firsts = {byte & ((1 << from_first) - 1) for byte in _PRINTABLE}
        nexts = {byte >> (8 - from_next) for byte in _PRINTABLE}
        return {first << from_next | after for first in firsts for after in nexts}

    def allowed(self, position: int) -> str:
        chars = "".join(self.alphabet[v] for v in sorted(self.values(position)))
        return chars + chars.swapcase() if self.folded else chars


_B32_BLOCKS: Final = re.compile(r"(?:[A-Z2-7]{8})+")
_B32_DIGITS: Final = str.maketrans(_UPPER + "234567", string.digits + _LOWER[:22])


def _b32(chars: str) -> bytes:
    """``base64.b32decode`` of ``chars`` in capitals. Whole blocks of its alphabet, what the
    shape lets through, read as one number in base 32 (in C: the library reads each block
    in Python); anything else by the library, errors and all."""
    upper = chars.upper()
    if not _B32_BLOCKS.fullmatch(upper):
        return base64.b32decode(upper)
    return int(upper.translate(_B32_DIGITS), 32).to_bytes(len(upper) * 5 // 8, "big")


_ENCODINGS: Final = (
    _Encoding("base64", _UPPER + _LOWER + string.digits + "+/", 6, 4, binascii.a2b_base64),
    _Encoding("base32", _UPPER + "234567", 5, 8, _b32, folded=True),
    _Encoding("hex", string.digits + "abcdef", 4, 2, bytes.fromhex, folded=True),
)


@cache
def _masks(encoding: _Encoding) -> tuple[tuple[int, dict[str, int]], ...]:
    """Per constraining place of a block, each character's mask: the ciphers under which,
    read back, it is a character the encoding of text has there. Places where every
    character fits under every cipher constrain nothing and are left out."""
    places = []
    for position in range(encoding.block):
        allowed = set(encoding.allowed(position))
        table: dict[str, int] = {}
        for char in _TOKEN_CHARS:
            if char.isalpha():
                fits = (i for i, undo in enumerate(_UNDO) if char.translate(undo) in allowed)
                table[char] = sum(1 << index for index in fits)
            else:  # a cipher of letters leaves it as it is
                table[char] = _ALL if char in allowed else 0
        if any(mask != _ALL for mask in table.values()):
            places.append((position, table))
    return tuple(places)


@cache
def _shape(encoding: _Encoding) -> re.Pattern[str]:
    """Whole blocks whose every character may be, under some cipher, one that the encoding of
    text has there: a letter where it has letters (a cipher moves a letter to a letter),
    or a digit or mark it has there (a cipher leaves those as they are). One C pass rules
    out most tokens."""
    return re.compile(f"(?:{''.join(_place_classes(encoding))})+")


def _place_classes(encoding: _Encoding) -> list[str]:
    """The class of characters :func:`_shape` lets stand at each place of a block."""
    places = []
    for position in range(encoding.block):
        allowed = encoding.allowed(position)
        kept = "".join(c for c in _TOKEN_CHARS if not c.isalpha() and c in allowed)
        letters = "A-Za-z" if any(c.isalpha() for c in allowed) else ""
        places.append(f"[{letters}{re.escape(kept)}]")
    return places


@cache
def _shape_bits(encoding: _Encoding) -> np.ndarray:
    """:func:`_shape` as a table for many tokens at once: for a character's place in its
    token modulo the block (``q``) and its byte (``b``), bit ``o`` of ``[q, b]`` is set when
    the shape lets the character stand where it falls in a chunk taken from offset ``o``
    (place ``(q - o) mod block`` of a block). A byte past ASCII (a character read as
    ``?``, in no class) has none."""
    block = encoding.block
    classes = [re.compile(c) for c in _place_classes(encoding)]
    table = np.zeros((block, 256), np.uint8)
    for byte in range(128):
        places = [p for p in range(block) if classes[p].fullmatch(chr(byte))]
        for q in range(block):
            table[q, byte] = sum(1 << o for o in range(block) if (q - o) % block in places)
    return table


def _by_place(encoding: _Encoding) -> tuple[dict[str, int], ...]:
    """Each place of a block's masks (:func:`_masks`), every cipher for every character
    at a place that constrains nothing."""
    tables = [dict.fromkeys(_TOKEN_CHARS, _ALL) for _ in range(encoding.block)]
    for position, table in _masks(encoding):
        tables[position] = table
    return tuple(tables)


@cache
def _foreign(encoding: _Encoding) -> re.Pattern[str] | None:
    """A character of a token that the shape allows at no place of a block (base 32 has no
    ``0``, ``1``, ``8``, ``9``, ``+`` or ``/``): for any offset, the whole blocks read hold
    every place of the token but its first and last ``block - 1``, so such a character
    there rules out every offset at once (one search, where each offset cost a match)."""
    allowed = {c for position in range(encoding.block) for c in encoding.allowed(position)}
    foreign = "".join(c for c in _TOKEN_CHARS if not c.isalpha() and c not in allowed)
    # None when there is none (base 64): a pattern that never matches was still tried at
    # every character of a token, and one token may be a whole reply.
    return re.compile(f"[{re.escape(foreign)}]") if foreign else None


@cache
def _mask_table(encoding: _Encoding) -> np.ndarray:
    """:func:`_by_place` as an array: the mask of each byte at each place of a block (0 for
    a byte not in :data:`_TOKEN_CHARS`, which the shape lets through nowhere)."""
    table = np.zeros((encoding.block, 256), np.uint32)
    for position, masks in enumerate(_by_place(encoding)):
        for char, mask in masks.items():
            table[position, ord(char)] = mask
    return table
