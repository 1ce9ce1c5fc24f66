"""The judge's decodings of bytes the other decodings do not read (and, from
:mod:`palaestra.rules.judge_alphabets`, those of their own alphabets).

- ``base64-unicode``, ``hex-unicode``: base 64 and hex whose bytes are text in an encoding
  other than ASCII: UTF-8 with characters outside ASCII (full-width letters), UTF-16 (little-
  or big-endian, with or without a byte order mark) and UTF-32; for hex, also UTF-16 code
  units and code points written one by one (``0051 0055``, ``U+0051``).
- ``words-decoded``: each word of base 64, base 32 or hex decoded on its own, so that a code
  whose parts were encoded one by one (``Q0lUQURFTA== NDA4OQ== TU9TQUlD``) reads as its parts.

Pure: no I/O.
"""

from __future__ import annotations

import binascii
import contextlib
import re
from collections.abc import Callable
from itertools import compress
from typing import Final

import numpy as np

from palaestra.rules.judge_alphabets import base2048, ecoji, uuencode
from palaestra.rules.judge_decoders import char_classes, long_words
from palaestra.rules.judge_tokens import unicode_candidates

__all__ = ["VIEWS", "base64_unicode", "hex_unicode", "words_decoded"]


_READABLE: Final = re.compile(
    "[\\x20-\\x7e\\u00a0-\\u024f\\u0370-\\u04ff\\uff01-\\uff5e\\U0001d400-\\U0001d7ff]{4,}"
)
_UNICODE_FORMS: Final = (("utf-16-le", 2), ("utf-16-be", 2), ("utf-32-le", 4), ("utf-32-be", 4))


def _unicode_readings(raw: bytes) -> list[str]:
    """The readable runs of ``raw`` read as UTF-8 (only when it holds characters outside
    ASCII and mostly decodes: the plain decodings read the rest), as UTF-16 when a quarter
    of it is zero bytes or it holds a byte order mark, as UTF-32 when two thirds are."""
    runs: list[str] = []
    if max(raw, default=0) >= 0x80:
        text = raw.decode("utf-8", "replace")
        if text.count("\ufffd") * 8 < len(text):
            runs += [r for r in _READABLE.findall(text) if not r.isascii()]
    zeros = raw.count(0)
    marked = raw.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00\x00\xfe\xff" in raw[:8]
    for form, unit in _UNICODE_FORMS:
        if zeros * (4 if unit == 2 else 3) < len(raw) * (1 if unit == 2 else 2) and not marked:
            continue
        for offset in range(unit if unit == 4 else 2):
            chunk = raw[offset:]
            text = chunk[: len(chunk) - len(chunk) % unit].decode(form, "replace")
            runs += _READABLE.findall(text.replace("\ufeff", ""))
    return runs


_B64_SIGNS: Final = (b"lu", b"ld", b"dl", b"du", b"ud", b"uul")
#: Hex of text has a word of twelve or more with a digit between letters, a letter between
#: digits or eight digits in a row; or pairs apart; or UTF-16 code units of ASCII
#: (``0051 0055``). Prose seldom has any of them.
_HEX_SIGNS: Final = (b"ldl", b"dld", b"udu", b"dud", b"d" * 8)
_CODE_UNITS: Final = re.compile(r"00[0-9A-Fa-f]{2}[\s,:.]+00[0-9A-Fa-f]{2}")
#: A word of base 64 (its groups may be rejoined first: the ``regrouped`` view).
_B64_TOKEN: Final = re.compile(r"[A-Za-z0-9+/_\-]{12,}")
_URLSAFE: Final = str.maketrans("-_", "+/")


def _b64_bytes(chars: str) -> bytes:
    chars = chars[: len(chars) - (len(chars) % 4 == 1)]
    return binascii.a2b_base64(chars + "=" * (-len(chars) % 4))


def _word_classes(word: str) -> bytes:
    """A word's character classes (:func:`char_classes` keeps those of whole texts)."""
    return word.encode("ascii", "replace").translate(_CLASSES)


_CLASSES: Final = bytes(
    ord("l")
    if chr(b).islower()
    else ord("u")
    if chr(b).isupper()
    else ord("d")
    if chr(b).isdigit()
    else ord("p")
    for b in range(256)
)


def base64_unicode(text: str) -> str | None:
    """Base 64 of text in UTF-16, UTF-32, or UTF-8 outside ASCII (full-width letters)."""
    # Only a word of twelve or more characters (ten bytes) with a sign of base 64 in it:
    # one look at the long words the base-85 views cut too (ten or more, kept for both).
    words = b"s".join(w for w in long_words(text, 10) if len(w) >= 12)
    if not any(sign in words for sign in _B64_SIGNS):
        return None
    pieces: list[str] = []
    for token in dict.fromkeys(_B64_TOKEN.findall(text)):
        chars = token.translate(_URLSAFE)
        if any(sign in _word_classes(chars) for sign in _B64_SIGNS):
            # A whole token decodes from its start; from a later offset only when its
            # length says something may be glued before it.
            pieces += (chars[offset:] for offset in range(1 if len(chars) % 4 == 0 else 4))
    if len(pieces) > _FEW_PIECES:  # only those that may read as Unicode text
        pieces = list(compress(pieces, unicode_candidates(pieces)))
    runs: list[str] = []
    for piece in pieces:
        try:
            raw = _b64_bytes(piece)
        except binascii.Error:
            continue
        runs += _unicode_readings(raw)
    return "\n".join(dict.fromkeys(runs)) if runs else None


#: Past this many pieces, those that cannot read as Unicode text are found at once.
_FEW_PIECES: Final = 64


#: Hex digits in pairs or code units, separators (or a ``0x``) between them allowed; a digit
#: among the first 25 (prose has runs of the letters a to f, hex of text has digits: even
#: full-width letters in UTF-8 give at most 24 hex letters in a row).
#: (Each repetition has one way to match: a quantifier inside a quantifier over a run of
#: spaces would try every way to cut it.)
_HEX_TOKEN: Final = re.compile(
    r"(?:0[xX]|\\[xX])?[A-Fa-f]{0,24}[0-9][0-9A-Fa-f]*"
    r"(?:(?:[\s:,.\-]+(?:0[xX]|\\[xX])?|0[xX]|\\[xX])[0-9A-Fa-f]{2,})*"
)
_NOT_HEX: Final = re.compile(r"0[xX]|\\[xX]|[^0-9A-Fa-f]")
#: Every character :data:`_HEX_TOKEN` may hold, in one class: a token lies inside a run of
#: them, and only a run with eight hex digits may hold one that is read (the token's
#: pattern, tried at every character of random base 64, cost 20 ms at 256 KiB).
_HEX_WIDE: Final = re.compile(r"[0-9A-Fa-fxX\\\s:,.\-]{8,}")
#: The bytes of UTF-8 that are not hex digits.
_NOT_HEX_BYTES: Final = bytes(b for b in range(256) if chr(b) not in "0123456789abcdefABCDEF")


def _hex_tokens(text: str) -> list[str]:
    """What :data:`_HEX_TOKEN` finds in ``text``, in the runs of :data:`_HEX_WIDE` that hold
    eight hex digits."""
    tokens: list[str] = []
    for run in _HEX_WIDE.findall(text):
        if len(run.encode().translate(None, _NOT_HEX_BYTES)) >= 8:
            tokens += _HEX_TOKEN.findall(run)
    return tokens


def _hex_digits(token: str) -> str:
    """``_NOT_HEX.sub("", token)``: without an ``x``, one bytes translation."""
    if "x" in token or "X" in token:
        return _NOT_HEX.sub("", token)
    return token.encode().translate(None, _NOT_HEX_BYTES).decode()


#: Code points written one by one: ``U+0051`` (``\u0051`` is the escapes view's).
_CODE_POINT: Final = re.compile(r"[Uu]\+([0-9A-Fa-f]{4,6})")


def _code_points(text: str) -> list[str]:
    points = [int(found.group(1), 16) for found in _CODE_POINT.finditer(text)]
    chars = "".join(chr(p) if 0x20 <= p < 0x110000 and p != 0xFEFF else "\n" for p in points)
    # Surrogates written one by one (U+D83D U+DE00) are joined into their character.
    chars = chars.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return _READABLE.findall(chars)


def hex_unicode(text: str) -> str | None:
    """Hex of text in UTF-16, UTF-32 or UTF-8 outside ASCII, UTF-16 code units written one
    by one (``0051 0055``), and code points (``U+0051 U+0055``)."""
    words = b"s".join(w for w in long_words(text, 10) if len(w) >= 12)
    signed = (
        any(sign in words for sign in _HEX_SIGNS)
        or b"ddsddsdd" in char_classes(text)
        or bool(_CODE_UNITS.search(text))
    )
    points = "U+" in text or "u+" in text
    if not signed and not points:
        return None
    runs: list[str] = []
    for token in dict.fromkeys(_hex_tokens(text) if signed else ()):
        chars = _hex_digits(token)
        if len(chars) < 8:
            continue
        # From the second digit too only when a stray one may be glued before the bytes.
        for offset in range(1 + len(chars) % 2):
            digits = chars[offset:]
            runs += _unicode_readings(bytes.fromhex(digits[: len(digits) - len(digits) % 2]))
    if points:
        runs += _code_points(text)
    return "\n".join(dict.fromkeys(runs)) if runs else None


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
    chars = word.rstrip("=").translate(_URLSAFE)
    if len(chars) % 4 != 1:  # the word has a sign of encoding already (_signed_words)
        with contextlib.suppress(binascii.Error):
            readings.append(_b64_bytes(chars))
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
#: A word of six to forty such characters that looks encoded: letters beside digits, mixed
#: case inside it, eight capitals, six digits, or padding after four capitals. The
#: look-ahead is bounded, so each place costs at most forty steps; and a text without any
#: of these signs is not searched.
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


def _sign_places(classes: bytes) -> np.ndarray:
    """Where a sign of encoding starts in ``classes``: a pair of :data:`_PAIR_SIGNS`, two
    capitals before a small letter, eight capitals, six digits, or four capitals before
    padding; with numpy, one pass per sign (a pattern of them all tried at every place
    cost ten times more)."""
    c = np.frombuffer(classes, np.uint8)
    if len(c) < 2:
        return np.zeros(0, np.intp)
    signed = np.zeros(len(c), bool)
    pairs = c[:-1].astype(np.uint16) << 8 | c[1:]
    signed[:-1] = _PAIR_SIGNED[pairs]
    upper, digit = c == ord("u"), c == ord("d")
    signed[:-2] |= upper[:-2] & upper[1:-1] & (c[2:] == ord("l"))
    for run, length in ((upper, 8), (digit, 6)):
        if len(c) >= length:
            signed[: len(c) - length + 1] |= _runs(run, length)
    if len(c) >= 5:
        signed[:-4] |= _runs(upper, 4)[:-1] & (c[4:] == ord("w"))
    return np.flatnonzero(signed)


def _signed_words(text: str) -> list[str]:
    """The words of ``text`` that look encoded, in order: each whole run of six to forty
    such characters with a sign in it, found from the places of the signs."""
    shared = char_classes(text)
    if not any(sign in shared for sign in _QUICK_SIGNS) and "=" not in text:
        return []
    classes = text.encode("ascii", "replace").translate(_WORD_CLASSES)
    places = _sign_places(classes)
    if not len(places):
        return []
    inside = np.frombuffer(classes, np.uint8) != 32
    edges = np.diff(np.concatenate(([False], inside, [False])).astype(np.int8))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    # The runs that hold a sign, in order (a mark per run: np.unique hashed them, slowly).
    which = np.zeros(len(starts), bool)
    which[np.searchsorted(starts, places, "right") - 1] = True
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
    """Whether each word (``length`` bytes of ``codes`` from ``starts``) may have a reading
    in :func:`_word_reading`: eight or more hex digits of one case, base 32 of one case,
    or base 64 whose every byte is printable (with a padding mark inside the word, whose
    first four bytes are); all words at once, where a call per word of random base 85 cost
    80 ms (and a call per word that base 64 reads as control bytes, 20 ms)."""
    if not len(starts):
        return np.zeros(0, bool)
    first = np.cumsum(length) - length
    relative = np.arange(int(length.sum())) - np.repeat(first, length)
    chars = codes[np.repeat(starts, length) + relative]

    def none(mask: np.ndarray) -> np.ndarray:
        return np.add.reduceat(mask, first) == 0  # type: ignore[no-any-return]

    # The word without its padding at the end (``word.rstrip("=")``): ``bare`` long.
    padding = chars == ord("=")
    bare = np.maximum.reduceat(np.where(padding, -1, relative), first) + 1
    inside = relative < np.repeat(bare, length)
    padded_inside = ~none(padding & inside)
    one_case = none(_IS_UPPER[chars]) | none(_IS_LOWER[chars])
    hex_ = none(~_IS_HEX[chars]) & one_case & (length >= 8) & (length % 2 == 0)
    b32 = none(~_IS_B32[chars]) & one_case & ((bare >= 8) | ((bare >= 2) & (bare < length)))
    # Base 64 as a2b_base64 reads the bare word: each of the first three places of a block
    # of four makes a byte of its bits and the next character's (when the word has one).
    values = _B64_VALUES[chars]
    place = relative % 4
    makes = (place < 3) & (relative < np.repeat(bare - 1, length))
    following = np.append(values[1:], 0)
    byte = values.astype(np.uint16) << (2 + 2 * place) & 0xFF
    byte |= following >> np.maximum(4 - 2 * place, 0)
    printable = (byte >= 0x20) & (byte <= 0x7E)
    b64 = none(makes & ~printable) & (bare % 4 != 1) & (bare * 6 // 8 >= _MIN_WORD)
    b64 &= ~padded_inside
    some = np.flatnonzero(padded_inside)
    if len(some):
        b64[some] = _first_bytes_printable(values, padding, first[some], length[some])
    readable: np.ndarray = hex_ | b32 | b64
    return readable


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


#: Every decoding of this module, by name, in the order the judge tries them.
VIEWS: Final[tuple[tuple[str, Callable[[str], str | None]], ...]] = (
    ("base64-unicode", base64_unicode),
    ("hex-unicode", hex_unicode),
    ("words-decoded", words_decoded),
    ("uuencode", uuencode),
    ("base2048", base2048),
    ("ecoji", ecoji),
)
