"""The judge's decodings of bytes the other decodings do not read.

- ``base2048`` (qntm's Base2048: eleven bits a character, from the ``base2048`` package) and
  ``ecoji`` (Ecoji 1: ten bits an emoji, from the ``ecoji`` package): runs of their
  alphabets decoded; the printable runs of the result.
- ``uuencode``: ``uuencode`` lines (a length character, then four characters per three
  bytes), with or without ``begin``/``end``.
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
import io
import re
from collections.abc import Callable
from functools import cache
from typing import Final

import base2048 as _base2048
import ecoji as _ecoji

from palaestra.rules.judge_decoders import char_classes, printable_runs

__all__ = [
    "VIEWS",
    "base64_unicode",
    "base2048",
    "ecoji",
    "hex_unicode",
    "uuencode",
    "words_decoded",
]


@cache
def _base2048_alphabet() -> str:
    """Base2048's 2,048 characters and its 8 tail characters, as the package encodes them:
    eleven bits ``k`` make the character ``k``."""
    chars = {_base2048.encode((k << 5).to_bytes(2, "big"))[0] for k in range(2048)}
    # A last character of two or three bits (after 3 or 10 bytes) is a tail character.
    chars |= {_base2048.encode(bytes(9) + bytes([bits]))[-1] for bits in range(8)}
    return "".join(sorted(chars))


@cache
def _base2048_run() -> re.Pattern[str]:
    return re.compile(f"[{re.escape(_base2048_alphabet())}]{{4,}}")


def base2048(text: str) -> str | None:
    """Runs of four or more Base2048 characters, each decoded (a run that is not a whole
    encoding, as a word of Russian prose may be, decodes to noise or not at all)."""
    if text.isascii():
        return None
    runs: list[str] = []
    for found in _base2048_run().finditer(text):
        run = found.group()
        for chars in (run, run[:-1]):  # a last character may be another run's tail
            try:
                raw = _base2048.decode(chars)
            except (_base2048.DecodeError, ValueError):
                continue
            if (printable := printable_runs(raw)) is not None:
                runs.append(printable)
            break
    return "\n".join(runs) if runs else None


@cache
def _ecoji_run() -> re.Pattern[str]:
    emojis = [*_ecoji.EMOJIS, _ecoji.PADDING, _ecoji.PADDING40, _ecoji.PADDING41]
    emojis += [_ecoji.PADDING42, _ecoji.PADDING43]
    return re.compile(f"(?:{'|'.join(map(re.escape, emojis))}){{4,}}")


def ecoji(text: str) -> str | None:
    """Runs of four or more Ecoji (version 1) emoji, each decoded."""
    if text.isascii():
        return None
    runs: list[str] = []
    for found in _ecoji_run().finditer(text):
        out = io.BytesIO()
        try:
            _ecoji.decode(io.StringIO(found.group()), out)
        except (_ecoji.EcojiError, ValueError, IndexError):
            continue
        if (printable := printable_runs(out.getvalue())) is not None:
            runs.append(printable)
    return "\n".join(runs) if runs else None


#: A uuencoded line: its length character (space to ``M``, 0 to 45 bytes), then at least one
#: group of four characters from space to backtick.
_UU_LINE: Final = re.compile(r"^[!-M][ -`]{4,84}$", re.MULTILINE)


def _uu_line(line: str) -> bytes | None:
    length = ord(line[0]) - 32
    if len(line) - 1 < (length + 2) // 3 * 4:
        return None
    try:
        return binascii.a2b_uu(line)
    except binascii.Error:
        return None


def uuencode(text: str) -> str | None:
    """``uuencode`` lines, those in a row decoded together; ``begin``/``end`` optional."""
    if "\n" not in text and not text.startswith(tuple("!\"#$%&'()*+,-./0123456789:;<=>?@AM")):
        return None
    raw = bytearray()
    runs: list[str] = []
    last_end = -1
    for found in _UU_LINE.finditer(text):
        decoded = _uu_line(found.group())
        if decoded is None:
            continue
        if found.start() != last_end + 1 and raw:
            runs += [r for r in [printable_runs(bytes(raw))] if r is not None]
            raw.clear()
        raw += decoded
        last_end = found.end()
    if raw:
        runs += [r for r in [printable_runs(bytes(raw))] if r is not None]
    return "\n".join(runs) if runs else None


#: Characters that fold to ASCII letters and digits (full-width forms, mathematical
#: alphanumerics) or are ASCII: what a text in another Unicode encoding is read for.
_READABLE: Final = re.compile(
    "[\\x20-\\x7e\\u00a0-\\u024f\\u0370-\\u04ff\\uff01-\\uff5e\\U0001d400-\\U0001d7ff]{4,}"
)
_UNICODE_FORMS: Final = ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")


def _unicode_readings(raw: bytes) -> list[str]:
    """The readable runs of ``raw`` read as UTF-8 (only when it holds characters outside
    ASCII: the plain decodings read the rest), UTF-16 and UTF-32, from each byte offset
    within a code unit."""
    runs: list[str] = []
    if max(raw, default=0) >= 0x80:
        text = raw.decode("utf-8", "replace")
        runs += [r for r in _READABLE.findall(text) if not r.isascii()]
    if raw.count(0) * 8 >= len(raw) or b"\xff\xfe" in raw or b"\xfe\xff" in raw:
        for form in _UNICODE_FORMS:
            unit = 4 if "32" in form else 2
            for offset in range(unit):
                chunk = raw[offset:]
                text = chunk[: len(chunk) - len(chunk) % unit].decode(form, "replace")
                runs += _READABLE.findall(text.replace("\ufeff", ""))
    return runs


_B64_SIGNS: Final = (b"lu", b"ld", b"dl", b"du", b"ud", b"uul")
_HEX_SIGNS: Final = (b"ld", b"dl", b"ud", b"du", b"dddd")
#: A word of base 64 (its groups may be rejoined first: the ``regrouped`` view).
_B64_TOKEN: Final = re.compile(r"[A-Za-z0-9+/_\-]{8,}")
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
    classes = char_classes(text)
    if not any(sign in classes for sign in _B64_SIGNS):
        return None
    runs: list[str] = []
    for found in _B64_TOKEN.finditer(text):
        chars = found.group().translate(_URLSAFE)
        if not any(sign in _word_classes(chars) for sign in _B64_SIGNS):
            continue
        for offset in range(4):
            try:
                raw = _b64_bytes(chars[offset:])
            except binascii.Error:
                continue
            runs += _unicode_readings(raw)
    return "\n".join(dict.fromkeys(runs)) if runs else None


#: Hex digits in pairs or code units, a separator or two (or a ``0x``) between them allowed.
#: (Each repetition has one way to match: a quantifier inside a quantifier over a run of
#: spaces would try every way to cut it.)
_HEX_TOKEN: Final = re.compile(
    r"(?:0[xX]|\\[xX])?[0-9A-Fa-f]{2,}"
    r"(?:(?:[\s:,.\-]+(?:0[xX]|\\[xX])?|0[xX]|\\[xX])[0-9A-Fa-f]{2,})*"
)
_NOT_HEX: Final = re.compile(r"0[xX]|\\[xX]|[^0-9A-Fa-f]")
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
    classes = char_classes(text)
    if not any(sign in classes for sign in _HEX_SIGNS):
        return None
    runs: list[str] = []
    for found in _HEX_TOKEN.finditer(text):
        chars = _NOT_HEX.sub("", found.group())
        if len(chars) < 8 or chars.isalpha():
            continue
        for offset in range(2):
            digits = chars[offset:]
            runs += _unicode_readings(bytes.fromhex(digits[: len(digits) - len(digits) % 2]))
    if "+" in text:
        runs += _code_points(text)
    return "\n".join(dict.fromkeys(runs)) if runs else None


_WORD: Final = re.compile(r"[A-Za-z0-9+/_\-]+=*")
_B32_WORD: Final = re.compile(r"[A-Z2-7]{8,}=*|[a-z2-7]{8,}=*|[A-Z2-7]{2,}=+|[a-z2-7]{2,}=+")
_HEX_WORD: Final = re.compile(r"(?:[0-9a-f]{2}){3,}|(?:[0-9A-F]{2}){3,}")
_PRINTABLE: Final = re.compile(rb"[\x20-\x7e]+")
#: A word decoded alone must read as at least this many printable characters.
_MIN_WORD: Final = 4


def _word_reading(word: str) -> str | None:
    readings: list[bytes] = []
    if _HEX_WORD.fullmatch(word):
        readings.append(bytes.fromhex(word))
    if _B32_WORD.fullmatch(word):
        readings.append(_b32(word))
    chars = word.rstrip("=").translate(_URLSAFE)
    if len(chars) % 4 != 1 and any(s in _word_classes(chars) for s in _B64_SIGNS):
        with contextlib.suppress(binascii.Error):
            readings.append(_b64_bytes(chars))
    for raw in readings:
        if len(raw) >= _MIN_WORD and _PRINTABLE.fullmatch(raw):
            return raw.decode()
    return None


_B32_DIGITS: Final = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "0123456789abcdefghijklmnopqrstuv"
)


def _b32(word: str) -> bytes:
    chars = word.rstrip("=").upper()
    bits = len(chars) * 5
    value = int(chars.translate(_B32_DIGITS), 32) >> (bits % 8)
    return value.to_bytes(bits // 8, "big")


_WORD_SIGNS: Final = re.compile(rb"ld|dl|lu|du|ud|uul|u{8}|d{6}")
_PADDED: Final = re.compile(r"[A-Za-z2-7]{4,}=")
_WORD_RUN: Final = re.compile(r"[A-Za-z0-9+/_\-]*=*")
_WORD_RUN_BACK: Final = re.compile(r"=*[A-Za-z0-9+/_\-]*")


def _signed_words(text: str) -> list[str]:
    """The words of ``text`` that look encoded (letters beside digits, mixed case inside a
    word, eight capitals, six digits), in order: found from the signs in the text's
    character classes, so that a reply of prose costs one search."""
    words: list[str] = []
    reverse: str | None = None
    last = -1
    signs = [sign.start() for sign in _WORD_SIGNS.finditer(char_classes(text))]
    if "=" in text:  # padded base 32 of a short word: "GQYDQOI="
        signs = sorted({*signs, *(found.start() for found in _PADDED.finditer(text))})
    for start in signs:
        if start < last:
            continue
        reverse = reverse if reverse is not None else text[::-1]
        end = _WORD_RUN.match(text, start).end()  # type: ignore[union-attr]
        back = _WORD_RUN_BACK.match(reverse, len(text) - start)
        start = len(text) - back.end()  # type: ignore[union-attr]
        words.append(text[start:end])
        last = end
    return words


def words_decoded(text: str) -> str | None:
    """Each word of base 64, base 32 or hex decoded on its own, in order, when two or more
    read as printable text: a code whose parts were encoded one by one reads as its parts."""
    read = [r for word in _signed_words(text) if len(word) >= 6 and (r := _word_reading(word))]
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
