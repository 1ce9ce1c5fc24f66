"""The judge's decodings of bytes the other decodings do not read (and, from
:mod:`palaestra.rules.judge.alphabets`, those of their own alphabets).

- ``base64-unicode``, ``hex-unicode``: base 64 and hex whose bytes are text in an encoding
  other than ASCII: UTF-8 with characters outside ASCII (full-width letters), UTF-16 (little-
  or big-endian, with or without a byte order mark) and UTF-32; for hex, also UTF-16 code
  units and code points written one by one (``0051 0055``, ``U+0051``).
- ``words-decoded`` (:mod:`palaestra.rules.judge.words`): each word of base 64, base 32 or
  hex decoded on its own.

Pure: no I/O.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable
from typing import Final

from palaestra.rules.judge.alphabets import base2048, ecoji, uuencode
from palaestra.rules.judge.classes import CHAR_CLASSES, holds, long_words
from palaestra.rules.judge.runs import ClassRuns
from palaestra.rules.judge.unicode import unicode_pieces
from palaestra.rules.judge.words import URLSAFE, b64_bytes, words_decoded

__all__ = ["VIEWS", "base64_unicode", "hex_unicode"]


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
_B64_SIGN: Final = re.compile(b"|".join(_B64_SIGNS))
#: Hex of text has a word of twelve or more with a digit between letters, a letter between
#: digits or eight digits in a row; or pairs apart; or UTF-16 code units of ASCII
#: (``0051 0055``). Prose seldom has any of them.
_HEX_SIGNS: Final = (b"ldl", b"dld", b"udu", b"dud", b"d" * 8)
_CODE_UNITS: Final = re.compile(r"00[0-9A-Fa-f]{2}[\s,:.]+00[0-9A-Fa-f]{2}")
#: A word of base 64 (its groups may be rejoined first: the ``regrouped`` view).
_B64_TOKEN: Final = re.compile(r"[A-Za-z0-9+/_\-]{12,}")
_B64_RUNS: Final = ClassRuns(_B64_TOKEN)


#: Each byte's character class, as :data:`~palaestra.rules.judge.classes.CHAR_CLASSES` has
#: them, whitespace read as punctuation (a token of base 64 holds none).
_CLASSES: Final = CHAR_CLASSES.replace(b"s", b"p")


def base64_unicode(text: str) -> str | None:
    """Base 64 of text in UTF-16, UTF-32, or UTF-8 outside ASCII (full-width letters)."""
    # Only a word of twelve or more characters (ten bytes) with a sign of base 64 in it:
    # one look at the long words the base-85 views cut too (ten or more, kept for both).
    words = b"s".join(w for w in long_words(text, 10) if len(w) >= 12)
    if not any(sign in words for sign in _B64_SIGNS):
        return None
    tokens = list(dict.fromkeys(_B64_RUNS.findall(text)))
    if len(tokens) > _FEW_TOKENS:  # cut, and kept only if they may read as Unicode text
        pieces = unicode_pieces(tokens, _B64_SIGNS)
    else:
        pieces = [piece for token in tokens for piece in _pieces(token)]
    runs: list[str] = []
    for piece in pieces:
        try:
            raw = b64_bytes(piece)
        except binascii.Error:
            continue
        runs += _unicode_readings(raw)
    return "\n".join(dict.fromkeys(runs)) if runs else None


#: Past this many tokens, they are cut and their pieces tested all at once.
_FEW_TOKENS: Final = 16


def _pieces(token: str) -> list[str]:
    """What one token is decoded as, when it holds a sign of base 64: from its start when
    its length is a multiple of four, else from each offset within one block (something
    may be glued before it); the URL-safe marks read as the standard ones, a mark for a
    mark (the token's classes are those of what it reads as)."""
    if _B64_SIGN.search(token.encode().translate(_CLASSES)) is None:
        return []
    chars = token.translate(URLSAFE) if "-" in token or "_" in token else token
    return [chars[offset:] for offset in range(1 if len(chars) % 4 == 0 else 4)]


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
_HEX_RUNS: Final = ClassRuns(_HEX_WIDE)
#: The bytes of UTF-8 that are not hex digits.
_NOT_HEX_BYTES: Final = bytes(b for b in range(256) if chr(b) not in "0123456789abcdefABCDEF")


def _hex_tokens(text: str) -> list[str]:
    """What :data:`_HEX_TOKEN` finds in ``text``, in the runs of :data:`_HEX_WIDE` that hold
    eight hex digits and one of :data:`_UNICODE_DIGIT`."""
    tokens: list[str] = []
    for run in _HEX_RUNS.findall(text):
        if len(run.encode().translate(None, _NOT_HEX_BYTES)) >= 8 and _UNICODE_DIGIT.search(run):
            tokens += _HEX_TOKEN.findall(run)
    return tokens


#: A hex digit without which :func:`_unicode_readings` reads nothing: hex of only ``1`` to
#: ``7`` is bytes under 0x80 (no UTF-8 outside ASCII), none of them zero (no UTF-16 or
#: UTF-32) and no byte order mark. The token's pattern over a long run of decimal codes
#: (``65 66 67``), one repetition per number, cost 15 ms at 256 KiB.
_UNICODE_DIGIT: Final = re.compile(r"[089A-Fa-f]")


def _hex_digits(token: str) -> str:
    """``_NOT_HEX.sub("", token)``: without an ``x``, one bytes translation."""
    if "x" in token or "X" in token:
        return _NOT_HEX.sub("", token)
    return token.encode().translate(None, _NOT_HEX_BYTES).decode()


#: Code points written one by one: ``U+0051`` (``\u0051`` is the escapes view's). The
#: pattern starts with the ``+``, which the search finds as a literal, the ``U`` looked
#: behind for: starting with ``[Uu]``, it was tried at each, 1.5 ms on random base 85.
_CODE_POINT: Final = re.compile(r"\+(?<=[Uu]\+)([0-9A-Fa-f]{4,6})")


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
        or holds(text, b"ddsddsdd")
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


#: Every decoding of this module, by name, in the order the judge tries them.
VIEWS: Final[tuple[tuple[str, Callable[[str], str | None]], ...]] = (
    ("base64-unicode", base64_unicode),
    ("hex-unicode", hex_unicode),
    ("words-decoded", words_decoded),
    ("uuencode", uuencode),
    ("base2048", base2048),
    ("ecoji", ecoji),
)
