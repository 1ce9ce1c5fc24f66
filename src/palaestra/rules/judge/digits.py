"""Strings of base 16, 32, 64 and 85 digits decoded to bytes, one piece or many at once.

The judge's decoding views (:mod:`palaestra.rules.judge.decoders`) cut a reply's tokens
into pieces, one from each offset; these decode them: a few pieces one by one in C (a
few long ones of base 32 or 85 with numpy, one at a time), many at once with numpy. A
piece the encoding refuses gives no bytes. Pure: no I/O.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable
from typing import Final

from palaestra.rules.judge.groups import groups_few, groups_many

__all__ = [
    "GROUPS",
    "a85_many",
    "b32_many",
    "b64_many",
    "hex_many",
    "rfc1924_many",
]

_URLSAFE: Final = str.maketrans("-_", "+/")
_B32_DIGITS: Final = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "0123456789abcdefghijklmnopqrstuv"
)


def _b64(chars: str) -> bytes:
    usable = len(chars) - (len(chars) % 4 == 1)
    chars = chars[:usable]
    if "-" in chars or "_" in chars:  # a translation reads every character, 1 ms at 256 KiB
        chars = chars.translate(_URLSAFE)
    return binascii.a2b_base64(chars + "=" * (-len(chars) % 4))


def _b32(chars: str) -> bytes:
    # Base 32 is a big-endian bit string: read it as one integer (linear time for a
    # power-of-two base) and keep the whole bytes.
    bits = len(chars) * 5
    if not bits // 8:
        return b""
    value = int(chars.upper().translate(_B32_DIGITS), 32) >> (bits % 8)
    return value.to_bytes(bits // 8, "big")


def _hex(chars: str) -> bytes:
    return bytes.fromhex(chars[: len(chars) - len(chars) % 2])


def _each(decode: Callable[[str], bytes]) -> Callable[[list[str]], bytes]:
    """A decoder of one piece made a decoder of many: the pieces' bytes, one zero byte
    (never in a printable run) between two; a piece the decoder refuses gives none."""

    def decoded(pieces: list[str]) -> bytes:
        out: list[bytes] = []
        for piece in pieces:
            try:
                out.append(decode(piece))
            except (binascii.Error, ValueError):
                continue
        return b"\x00".join(out)

    return decoded


_A85_DIGITS: Final = bytes(b - 33 if 33 <= b <= 117 else 255 for b in range(256))
_RFC1924_ALPHABET: Final = (
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
)
_RFC1924_DIGITS: Final = bytes(
    _RFC1924_ALPHABET.index(b) if b in _RFC1924_ALPHABET else 255 for b in range(256)
)


def _digit_table(alphabet: bytes, *, either_case: bool = False, also: bytes = b"") -> bytes:
    """Each byte's value as a digit of ``alphabet`` (and of ``also``, read as its last
    digits), 255 for a byte that is none."""
    table = bytearray(b"\xff" * 256)
    for value, char in enumerate(alphabet):
        table[char] = value
        if either_case:
            table[ord(chr(char).lower())] = value
    for value, char in enumerate(also, len(alphabet) - len(also)):
        table[char] = value
    return bytes(table)


#: Base 64's digits, the URL-safe ``-`` and ``_`` read as ``+`` and ``/``.
_B64_DIGITS: Final = _digit_table(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", also=b"-_"
)


#: Up to this many pieces, each is decoded apart (in C, for base 64 and hex): numpy's
#: passes over the digits cost more than a few calls.
_FEW_PIECES: Final = 64


def b64_many(pieces: list[str]) -> bytes:
    if len(pieces) <= _FEW_PIECES:
        return _each(_b64)(pieces)
    return groups_many(pieces, _B64_DIGITS, 64, 4, 3)


def b32_many(pieces: list[str]) -> bytes:
    """The pieces' bytes; each piece holds base 32's digits only, as the views cut them
    (one by one, ``int`` would read ``0``, ``1``, ``8`` and ``9`` too)."""
    if len(pieces) <= _FEW_PIECES:
        if sum(map(len, pieces)) > _LONG_B32:
            # A long token from each offset: numpy reads its blocks faster than an integer
            # of it is read and written back (28 -> 16 ms for a token of 256 KiB).
            return groups_few(pieces, _B32_TABLE, 32, 8, 5)
        return _each(_b32)(pieces)
    return groups_many(pieces, _B32_TABLE, 32, 8, 5)


#: Few pieces of base 32 longer than this in all are read by :func:`groups_few`.
_LONG_B32: Final = 256 * 1024


def hex_many(pieces: list[str]) -> bytes:
    if len(pieces) <= _FEW_PIECES:
        return _each(_hex)(pieces)
    return groups_many(pieces, _HEX_TABLE, 16, 2, 1)


_B32_TABLE: Final = _digit_table(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", either_case=True)
_HEX_TABLE: Final = _digit_table(b"0123456789ABCDEF", either_case=True)


def a85_many(pieces: list[str]) -> bytes:
    decode = groups_few if len(pieces) <= _FEW_PIECES else groups_many
    return decode(pieces, _A85_DIGITS, 85, 5, 4)


def rfc1924_many(pieces: list[str]) -> bytes:
    decode = groups_few if len(pieces) <= _FEW_PIECES else groups_many
    return decode(pieces, _RFC1924_DIGITS, 85, 5, 4)


#: Each decoder of many pieces by its digits: their table, base, block and bytes a block
#: makes (:func:`groups_spans` reads pieces given as spans with them).
GROUPS: Final[dict[Callable[[list[str]], bytes], tuple[bytes, int, int, int]]] = {
    b64_many: (_B64_DIGITS, 64, 4, 3),
    b32_many: (_B32_TABLE, 32, 8, 5),
    hex_many: (_HEX_TABLE, 16, 2, 1),
    a85_many: (_A85_DIGITS, 85, 5, 4),
    rfc1924_many: (_RFC1924_DIGITS, 85, 5, 4),
}
