"""The judge's ``words-decoded`` view: each word of base 64, base 32 or hex decoded on its
own, so that a code whose parts were encoded one by one (``Q0lUQURFTA== NDA4OQ== TU9TQUlD``)
reads as its parts. The words are found, and those that cannot read as printable text
left out, all at once with numpy.

Pure: no I/O.
"""

from __future__ import annotations

import binascii
import contextlib
import re
from typing import Final

import numpy as np

from palaestra.rules.judge.classes import holds
from palaestra.rules.judge.runs import true_runs

__all__ = ["URLSAFE", "b64_bytes", "words_decoded"]

#: Base 64's URL-safe digits read as the standard ones.
URLSAFE: Final = str.maketrans("-_", "+/")


def b64_bytes(chars: str) -> bytes:
    """Base 64 digits (padding left off) as ``a2b_base64`` reads them: a stray last digit
    dropped, the padding added."""
    chars = chars[: len(chars) - (len(chars) % 4 == 1)]
    return binascii.a2b_base64(chars + "=" * (-len(chars) % 4))


_B32_WORD: Final = re.compile(r"[A-Z2-7]{8,}=*|[a-z2-7]{8,}=*|[A-Z2-7]{2,}=+|[a-z2-7]{2,}=+")
_HEX_WORD: Final = re.compile(r"(?:[0-9a-f]{2}){3,}|(?:[0-9A-F]{2}){3,}")
_PRINTABLE: Final = re.compile(rb"[\x20-\x7e]+")
#: A word decoded alone must read as at least this many printable characters.
_MIN_WORD: Final = 4


#: The characters of hex and of base 32 words: a word of neither, without padding, and
#: not base 64 of printable text, has no reading (:func:`_may_read`).
_HEX_CHARS: Final = "0123456789abcdefABCDEF"
_B32_CHARS: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz234567="


def _word_reading(word: str) -> str | None:
    readings: list[bytes] = []
    if _HEX_WORD.fullmatch(word):
        readings.append(bytes.fromhex(word))
    if _B32_WORD.fullmatch(word):
        readings.append(_b32(word))
    chars = word.rstrip("=").translate(URLSAFE)
    if len(chars) % 4 != 1:  # the word has a sign of encoding already (_signed_words)
        with contextlib.suppress(binascii.Error):
            readings.append(b64_bytes(chars))
    # Every reading that is printable: a word of capitals may be base 32 and base 64 both.
    read = [raw.decode() for raw in readings if len(raw) >= _MIN_WORD and _PRINTABLE.fullmatch(raw)]
    return " ".join(read) or None


_B32_DIGITS: Final = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "0123456789abcdefghijklmnopqrstuv"
)


def _b32(word: str) -> bytes:
    chars = word.rstrip("=").upper()
    bits = len(chars) * 5
    value = int(chars.translate(_B32_DIGITS), 32) >> (bits % 8)
    return value.to_bytes(bits // 8, "big")


#: Each character's class for finding encoded words: ``l`` ``u`` ``d`` as
#: :func:`char_classes` has them, ``w`` the other characters of base 64 and its padding.
_WORD_CLASSES: Final = bytes(
    ord("l")
    if chr(b).islower() and b < 128
    else ord("u")
    if chr(b).isupper() and b < 128
    else ord("d")
    if chr(b).isdigit() and b < 128
    else ord("w")
    if chr(b) in "+/_-="
    else 32
    for b in range(256)
)
#: A word of six to forty such characters looks encoded with one of these signs: letters
#: beside digits, mixed case inside it, eight capitals, six digits, or padding after four
#: capitals; the quick ones are looked for first, in the classes every view shares.
_QUICK_SIGNS: Final = (b"ld", b"dl", b"lu", b"du", b"ud", b"u" * 8, b"d" * 6)
_PAIR_SIGNS: Final = (b"ld", b"dl", b"lu", b"du", b"ud")
_WORD_MIN, _WORD_MAX = 6, 40


#: Whether each pair of classes (the first one's byte shifted left by eight) is a sign.
_PAIR_SIGNED: Final = np.zeros(1 << 16, bool)
_PAIR_SIGNED[[a << 8 | b for a, b in _PAIR_SIGNS]] = True


def _runs(of: np.ndarray, length: int) -> np.ndarray:
    """Whether each of the first ``len(of) - length + 1`` places starts ``length`` true
    values of ``of`` in a row."""
    window = of[: len(of) - length + 1].copy()
    for step in range(1, length):
        window &= of[step : len(of) - length + 1 + step]
    return window


def _sign_starts(classes: bytes) -> np.ndarray:
    """Whether a sign of encoding starts at each place of ``classes``: a pair of
    :data:`_PAIR_SIGNS`, two capitals before a small letter, eight capitals, six digits, or
    four capitals before padding; with numpy, one pass per sign (a pattern of them all
    tried at every place cost ten times more)."""
    c = np.frombuffer(classes, np.uint8)
    signed = np.zeros(len(c), bool)
    if len(c) < 2:
        return signed
    pairs = c[:-1].astype(np.uint16) << 8 | c[1:]
    signed[:-1] = _PAIR_SIGNED[pairs]
    upper, digit = c == ord("u"), c == ord("d")
    signed[:-2] |= upper[:-2] & upper[1:-1] & (c[2:] == ord("l"))
    for run, length in ((upper, 8), (digit, 6)):
        if len(c) >= length:
            signed[: len(c) - length + 1] |= _runs(run, length)
    if len(c) >= 5:
        signed[:-4] |= _runs(upper, 4)[:-1] & (c[4:] == ord("w"))
    return signed


def _signed_words(text: str) -> list[str]:
    """The words of ``text`` that look encoded, in order: each whole run of six to forty
    such characters with a sign in it, found from the places of the signs."""
    if not holds(text, *_QUICK_SIGNS) and "=" not in text:
        return []
    classes = text.encode("ascii", "replace").translate(_WORD_CLASSES)
    signed = _sign_starts(classes)
    if not signed.any():
        return []
    inside = np.frombuffer(classes, np.uint8) != 32
    starts, ends = true_runs(inside)
    # The runs that hold a sign, in order: a sign lies inside its run, so the signs up to
    # its end less those before its start are its own (each sign's run looked up cost 1.8
    # ms on the hundred thousand signs of random base 85, a sum per run 1 ms).
    counted = np.cumsum(signed, dtype=np.int32)  # the signs up to each place, it included
    which = counted[ends - 1] - counted[starts] + signed[starts] > 0
    starts, ends = starts[which], ends[which]
    length = ends - starts
    keep = (length >= _WORD_MIN) & (length <= _WORD_MAX)
    starts, length = starts[keep], length[keep]
    readable = _may_read(np.frombuffer(text.encode("ascii", "replace"), np.uint8), starts, length)
    starts, ends = starts[readable], starts[readable] + length[readable]
    return [text[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]


def _table(chars: str) -> np.ndarray:
    table = np.zeros(256, bool)
    table[list(chars.encode())] = True
    return table


_IS_HEX, _IS_B32 = map(_table, (_HEX_CHARS, _B32_CHARS))
_IS_UPPER, _IS_LOWER = map(_table, (_B32_CHARS[:26], _B32_CHARS[26:52]))
#: Each byte's value as a digit of base 64 (``-`` and ``_`` read as ``+`` and ``/``), 0 for
#: any other: a word holding another character has ``=`` in it, and is read anyway.
_B64_VALUES: Final = np.zeros(256, np.uint8)
for _value, _char in enumerate(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"):
    _B64_VALUES[_char] = _value
_B64_VALUES[[ord("-"), ord("_")]] = (62, 63)


def _may_read(codes: np.ndarray, starts: np.ndarray, length: np.ndarray) -> np.ndarray:
    """:func:`_may_read_all` of the words whose first characters may start a reading
    (:func:`_may_start`), the others false: most words of random base 85 are dropped
    before their every character is gathered."""
    readable = np.zeros(len(starts), bool)
    # A word shorter than _START (a reply's words are not: :func:`_signed_words` keeps
    # longer ones) is gathered whole.
    maybe = length < _START
    whole = np.flatnonzero(~maybe)
    maybe[whole] = _may_start(codes, starts[whole])
    some = np.flatnonzero(maybe)
    readable[some] = _may_read_all(codes, starts[some], length[some])
    return readable


#: The first characters of a word looked at by :func:`_may_start` (every word has them).
_START: Final = _WORD_MIN


def _may_start(codes: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Whether each word's first :data:`_START` characters may start a reading of
    :func:`_may_read_all`: hex and base 32 are of their characters throughout, in one
    case; base 64 without a padding mark there reads its first three bytes from the
    first four characters (a reading needs four bytes, so six characters), and they are
    printable; a word with a padding mark there is kept (its reading skips the mark).
    Each character's kinds are bits, or-ed over the six; the characters of one place in
    all words are a row (a row per word made each step a reduction along it)."""
    first = codes[np.arange(_START)[:, None] + starts]
    held = np.bitwise_or.reduce(_KINDS[first], axis=0)
    padded = (held & _PADDING) != 0
    one_case = (held & _BOTH_CASES) != _BOTH_CASES
    hex_ = ((held & _NOT_HEX) == 0) & one_case
    b32 = ((held & _NOT_B32) == 0) & one_case
    v = _B64_VALUES[first[:4]].astype(np.uint16)
    made = (
        (v[0] << 2 | v[1] >> 4) & 0xFF,
        (v[1] << 4 | v[2] >> 2) & 0xFF,
        (v[2] << 6 | v[3]) & 0xFF,
    )
    b64 = np.ones(len(starts), bool)
    for byte in made:
        b64 &= (byte >= 0x20) & (byte <= 0x7E)
    kept: np.ndarray = padded | hex_ | b32 | b64
    return kept


def _may_read_all(codes: np.ndarray, starts: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Whether each word (``length`` bytes of ``codes`` from ``starts``) may have a reading
    in :func:`_word_reading`: eight or more hex digits of one case, base 32 of one case,
    or base 64 whose every byte is printable (with a padding mark inside the word, whose
    first four bytes are); all words at once, where a call per word of random base 85 cost
    80 ms (and a call per word that base 64 reads as control bytes, 20 ms). What each
    word holds is one or-ed sum of bits per character (a sum per test was five)."""
    if not len(starts):
        return np.zeros(0, bool)
    first = np.cumsum(length) - length
    relative = np.arange(int(length.sum())) - np.repeat(first, length)
    chars = codes[np.repeat(starts, length) + relative]
    # The word without its padding at the end (``word.rstrip("=")``): ``bare`` long.
    padding = chars == ord("=")
    bare = np.maximum.reduceat(np.where(padding, -1, relative), first) + 1
    kinds = _KINDS[chars]
    kinds[padding & (relative < np.repeat(bare, length))] |= _PADDED_INSIDE
    # Base 64 as a2b_base64 reads the bare word: each of the first three places of a block
    # of four makes a byte of its bits and the next character's (when the word has one).
    values = _B64_VALUES[chars]
    place = relative % 4
    makes = (place < 3) & (relative < np.repeat(bare - 1, length))
    following = np.append(values[1:], 0)
    byte = values.astype(np.uint16) << (2 + 2 * place) & 0xFF
    byte |= following >> np.maximum(4 - 2 * place, 0)
    kinds[makes & ((byte < 0x20) | (byte > 0x7E))] |= _UNPRINTABLE
    held = np.bitwise_or.reduceat(kinds, first)
    padded_inside = (held & _PADDED_INSIDE) != 0
    one_case = (held & _BOTH_CASES) != _BOTH_CASES
    hex_ = ((held & _NOT_HEX) == 0) & one_case & (length >= 8) & (length % 2 == 0)
    b32 = ((held & _NOT_B32) == 0) & one_case & ((bare >= 8) | ((bare >= 2) & (bare < length)))
    b64 = ((held & _UNPRINTABLE) == 0) & (bare % 4 != 1) & (bare * 6 // 8 >= _MIN_WORD)
    b64 &= ~padded_inside
    some = np.flatnonzero(padded_inside)
    if len(some):
        b64[some] = _first_bytes_printable(values, padding, first[some], length[some])
    readable: np.ndarray = hex_ | b32 | b64
    return readable


#: Each byte's kinds for :func:`_may_start` and :func:`_may_read_all`, as bits; two more
#: bits are a word's own (a padding mark inside it, a byte of base 64 not printable).
_PADDING, _UPPER, _LOWER, _NOT_HEX, _NOT_B32, _PADDED_INSIDE, _UNPRINTABLE = (
    1 << bit for bit in range(7)
)
_BOTH_CASES: Final = _UPPER | _LOWER
_KINDS: Final = (
    (np.arange(256) == ord("=")) * _PADDING
    | _IS_UPPER * _UPPER
    | _IS_LOWER * _LOWER
    | ~_IS_HEX * _NOT_HEX
    | ~_IS_B32 * _NOT_B32
).astype(np.uint8)


def _first_bytes_printable(
    values: np.ndarray, padding: np.ndarray, first: np.ndarray, length: np.ndarray
) -> np.ndarray:
    """Whether the first :data:`_MIN_WORD` bytes of each word (``length`` values of base 64
    digits from ``first``) are printable, its padding marks left out: with a mark inside
    the word, ``a2b_base64`` skips it, stops there, or refuses the word, and what it reads
    starts as the word read without them does."""
    owner = np.repeat(np.arange(len(first)), length)
    at = (
        np.repeat(first, length)
        + np.arange(int(length.sum()))
        - np.repeat(np.cumsum(length) - length, length)
    )
    data = ~padding[at]
    rank = np.cumsum(data) - data
    rank -= np.repeat(rank[np.cumsum(length) - length], length)
    chosen = data & (rank < 6)  # six digits make the first four bytes
    digits = np.zeros((len(first), 6), np.uint16)
    digits[owner[chosen], rank[chosen]] = values[at[chosen]]
    enough = np.bincount(owner[chosen], minlength=len(first)) == 6
    d = digits.T
    made = (
        (d[0] << 2 | d[1] >> 4) & 0xFF,
        (d[1] << 4 | d[2] >> 2) & 0xFF,
        (d[2] << 6 | d[3]) & 0xFF,
        (d[4] << 2 | d[5] >> 4) & 0xFF,
    )
    printable: np.ndarray = enough
    for byte in made:
        printable = printable & (byte >= 0x20) & (byte <= 0x7E)
    return printable


def words_decoded(text: str) -> str | None:
    """Each word of base 64, base 32 or hex decoded on its own, in order, when two or more
    read as printable text: a code whose parts were encoded one by one reads as its parts."""
    words = _signed_words(text)
    readings = {w: _word_reading(w) for w in set(words)}
    read = [r for w in words if (r := readings.get(w))]
    return " ".join(read) if len(read) >= 2 else None
