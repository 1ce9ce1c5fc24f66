"""The judge's decoding views: text in an encoding, read back as the text it encodes.

Each view is a pure function from a reply (or an earlier view of it) to a new text, or
``None`` when the text holds nothing in its encoding: a cheap test comes first, so a reply
without, say, a ``%`` costs the percent view one search. Byte-stream decodings (base64,
base32, base85, hex) rejoin a token across the separators a defender puts inside it
(whitespace, quote markers and ``+`` between adjacent string literals, zero-width
characters, dashes, commas), decode it from every offset within one block, and keep only
the runs of printable text in the result: what a reader would see. Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import html
import quopri
import re
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Final

import numpy as np

__all__ = [
    "ascii85",
    "base32",
    "base64_text",
    "base85",
    "binary_codes",
    "char_classes",
    "decimal_codes",
    "escapes",
    "hex_text",
    "html_entities",
    "long_words",
    "octal_codes",
    "percent",
    "printable_runs",
    "quoted_printable",
]

#: Decoded runs of printable text shorter than this are noise, not a message.
MIN_RUN: Final = 4
_PRINTABLE_RUN: Final = re.compile(rb"[\x20-\x7e]{%d,}" % MIN_RUN)
#: What may sit inside an encoded token without ending it.
_SEPARATORS: Final = "\\s\"'`+,\\-\u00ad\u200b-\u200f\u2060-\u2064\ufeff"
_B64_TOKEN: Final = re.compile(f"[A-Za-z0-9/_{_SEPARATORS}]{{8,}}")
_B32_TOKEN: Final = re.compile(f"[A-Za-z2-7{_SEPARATORS}]{{8,}}")
_HEX_TOKEN: Final = re.compile(f"(?:0[xX]|\\\\[xX]|[0-9A-Fa-f:{_SEPARATORS}]){{8,}}")
_HEX_SKIP: Final = re.compile(r"0[xX]|\\[xX]|[^0-9A-Fa-f]")
_B85_TOKEN: Final = re.compile(r"<~[!-u\s]+~>|[!-u]{10,}")
_RFC1924_TOKEN: Final = re.compile(r"[0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~]{10,}")
_URLSAFE: Final = str.maketrans("-_", "+/")
_B32_DIGITS: Final = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "0123456789abcdefghijklmnopqrstuv"
)
_NOT_B64: Final = re.compile(r"[^A-Za-z0-9+/_\-]")
_NOT_B32: Final = re.compile(r"[^A-Za-z2-7]")


def printable_runs(raw: bytes) -> str | None:
    """The runs of printable ASCII in ``raw``, one per line; ``None`` if there are none."""
    runs = _PRINTABLE_RUN.findall(raw)
    return b"\n".join(runs).decode() if runs else None


def _b64(chars: str) -> bytes:
    usable = len(chars) - (len(chars) % 4 == 1)
    chars = chars[:usable].translate(_URLSAFE)
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


_CLASSES: Final = bytes(
    ord("l")
    if chr(b).islower()
    else ord("u")
    if chr(b).isupper()
    else ord("d")
    if chr(b).isdigit()
    else ord("s")
    if chr(b).isspace()
    else ord("p")
    for b in range(256)
)


@lru_cache(maxsize=16)
def char_classes(text: str) -> bytes:
    """``text`` with each character replaced by its class: ``l`` lower-case, ``u`` upper-case,
    ``d`` digit, ``s`` space, ``p`` anything else. Searching this for a short literal
    (``b"ld"``: a letter then a digit) is how a view tells in microseconds that it has
    nothing to read; a regular expression over the reply takes tens of them. Kept for the
    last few texts: every view of a reply asks for the same one."""
    return text.encode("ascii", "replace").translate(_CLASSES)


#: What an encoding looks like and prose does not, as adjacent character classes: base64
#: mixes case, or letters and digits, inside a word; base32 has digits beside capitals, or
#: eight capitals in a row; hex has digits beside letters, eight digits in a row, or four
#: pairs of them;
#: base85 see below. A text without its sign is not decoded.
_SIGNS: Final = {
    "base64": (b"lu", b"ld", b"dl", b"du", b"ud", b"uul"),
    "base32": (b"ud", b"du", b"ld", b"dl", b"uuuuuuuu"),
    "hex": (b"ld", b"dl", b"ud", b"du", b"dddddddd", b"ddsddsddsdd"),
}


def _signed(text: str, signs: tuple[bytes, ...]) -> bool:
    classes = char_classes(text)
    return any(sign in classes for sign in signs)


@lru_cache(maxsize=16)
def long_words(text: str, length: int) -> tuple[bytes, ...]:
    """The classes (:func:`char_classes`) of the words of ``text`` at least ``length`` long:
    most replies have none, which one C pass over the words tells."""
    words = char_classes(text).split(b"s")
    if max(map(len, words), default=0) < length:
        return ()
    return tuple(word for word in words if len(word) >= length)


def _base85_word(word: bytes) -> bool:
    """Whether a word's classes look like base 85: mixed cases with a mark or a digit, or
    two marks and a capital or a digit."""
    marked = b"p" in word or b"d" in word
    return (b"lu" in word and marked) or (word.count(b"p") >= 2 and (b"u" in word or b"d" in word))


def _base85_signed(text: str) -> bool:
    """A word of ten or more characters that looks like base 85."""
    return any(_base85_word(word) for word in long_words(text, 10))


def _base85_token(token: str) -> bool:
    # Not through char_classes: its cache is for whole replies, which tokens would evict.
    return _base85_word(token.encode("ascii", "replace").translate(_CLASSES))


def _decoded_tokens(
    text: str,
    token: re.Pattern[str],
    drop: re.Pattern[str],
    block: int,
    decode: Callable[[list[str]], bytes],
    signed: Callable[[str], bool] | None = None,
) -> str | None:
    """The printable runs of each token decoded from every offset within one block: every
    decoding is gathered first and decoded at once (``decode``), then searched for runs in
    one pass (a call per token and offset cost more than the decoding itself)."""
    pieces: list[str] = []
    # A token said again is cut into the same pieces: each distinct one is cut once (a
    # reply of one short token repeated holds tens of thousands).
    cut: dict[str, list[str]] = {}
    for found in token.finditer(text):
        group = found.group()
        known = cut.get(group)
        if known is None:
            known = cut[group] = _pieces(group, drop, block, signed)
        pieces += known
    return printable_runs(decode(pieces)) if pieces else None


def _pieces(
    group: str, drop: re.Pattern[str], block: int, signed: Callable[[str], bool] | None
) -> list[str]:
    """What one token is decoded as: from every offset within one block, and again without
    its dashes, or without a short last word."""
    if len(group) < 2 * block:
        return []  # what is dropped only makes it shorter
    if signed is not None and not signed(group):
        return []  # a long word of prose, not an encoded token
    chars = _dropped(group, drop)
    if len(chars) < 2 * block:
        return []
    pieces = _offsets(chars, block)
    if "-" in chars or "_" in chars:  # URL-safe characters, or dashes between groups
        pieces += _offsets(chars.replace("-", "").replace("_", ""), block)
    tail = _SHORT_TAIL.search(group, max(0, len(group) - 2 * block))
    if tail is not None and len(tail.group().strip()) < block:
        # A short word after the token ("... ANRX gb") is rejoined to it, and its bits
        # would add a character to the end of what the token says: read it without.
        pieces += _offsets(_dropped(group[: tail.start()], drop), block)
    return pieces


_SHORT_TAIL: Final = re.compile(r"\s\S{1,7}\s*\Z")


def _dropped(group: str, drop: re.Pattern[str]) -> str:
    """``drop.sub("", group)``; where ``drop`` is a set of characters (and for hex, when
    the token has no ``x``; for base 85, when it is ASCII with no ``~``), one bytes
    translation instead: a pattern tried at each character of a long token cost more."""
    if drop is _HEX_SKIP and ("x" in group or "X" in group):
        return drop.sub("", group)
    if drop is _SPACE:
        if not group.isascii():
            return drop.sub("", group)
        # "<~" at the start and "~>" at the end, as the pattern finds them.
        start = 2 if group.startswith("<~") else 0
        end = len(group) - 2 if group.endswith("~>") and len(group) - 2 >= start else None
        group = group[start:end]
    deleted = _DELETED.get(drop)
    if deleted is None:
        return drop.sub("", group)
    return group.encode().translate(None, deleted).decode("ascii")


def _offsets(chars: str, block: int) -> list[str]:
    """``chars`` from every offset within one block (a last character alone is no byte)."""
    return [chars[offset:] for offset in range(min(block, max(len(chars) - 1, 0)))]


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


def base64_text(text: str) -> str | None:
    """Base 64, standard and URL-safe alphabets, padding optional."""
    if not _signed(text, _SIGNS["base64"]):
        return None
    return _decoded_tokens(text, _B64_TOKEN, _NOT_B64, 4, _b64_many)


def base32(text: str) -> str | None:
    """Base 32 (RFC 4648), either case, padding optional."""
    if not _signed(text, _SIGNS["base32"]):
        return None
    return _decoded_tokens(text, _B32_TOKEN, _NOT_B32, 8, _b32_many)


def hex_text(text: str) -> str | None:
    """Hexadecimal bytes, with or without ``0x``/``\\x`` prefixes and separators."""
    if not _signed(text, _SIGNS["hex"]):
        return None
    return _decoded_tokens(text, _HEX_TOKEN, _HEX_SKIP, 2, _hex_many)


_A85_DIGITS: Final = bytes(b - 33 if 33 <= b <= 117 else 255 for b in range(256))
_RFC1924_ALPHABET: Final = (
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
)
_RFC1924_DIGITS: Final = bytes(
    _RFC1924_ALPHABET.index(b) if b in _RFC1924_ALPHABET else 255 for b in range(256)
)


def _base85(chars: str, digits: bytes) -> bytes:
    """Base 85 digits (``digits`` gives each character's value) as bytes, as the standard
    library's ``a85decode`` and ``b85decode`` read them (theirs loop over every character in
    Python: a hundred times slower). A last group of one character is not a byte; a shorter
    group of two or more is, padded with the highest digit.

    All groups at once, in C: each of the five digit columns is spread into 8-byte slots
    of one integer, the five integers are combined by powers of 85 (a group's value fits
    its slot, so no slot carries into the next), and each slot's low four bytes are its
    group's bytes; a fifth byte set is a group past 2**32, which the encoding refuses."""
    values = chars[: len(chars) - (len(chars) % 5 == 1)].encode("ascii", "replace")
    values = values.translate(digits)
    if b"\xff" in values:
        raise ValueError("not a base 85 digit")
    padding = -len(values) % 5
    values += b"\x54" * padding
    groups = len(values) // 5
    total = 0
    for column in range(5):
        slots = bytearray(8 * groups)
        slots[0::8] = values[column::5]
        total = total * 85 + int.from_bytes(slots, "little")
    raw = total.to_bytes(8 * groups, "little")
    if raw[4::8].strip(b"\x00"):
        raise ValueError("base 85 overflow")
    decoded = bytearray(4 * groups)
    for at in range(4):
        decoded[at::4] = raw[3 - at :: 8]
    return bytes(decoded[: len(decoded) - padding])


#: Up to this many characters, the standard library's decoders cost less than spreading
#: the groups out: their loop is short, and the spreading has a fixed cost.
_FEW_CHARS: Final = 320


def _a85(chars: str) -> bytes:
    if len(chars) <= _FEW_CHARS:
        return base64.a85decode(chars[: len(chars) - (len(chars) % 5 == 1)], adobe=False)
    return _base85(chars, _A85_DIGITS)


def _rfc1924(chars: str) -> bytes:
    if len(chars) <= _FEW_CHARS:
        return base64.b85decode(chars[: len(chars) - (len(chars) % 5 == 1)])
    return _base85(chars, _RFC1924_DIGITS)


def _groups_many(pieces: list[str], digits: bytes, base: int, block: int, size: int) -> bytes:
    """Each piece decoded as a string of digits in ``base`` (``digits`` gives each
    character's value), ``block`` of them for ``size`` bytes, as the one-piece decoders
    read it; all at once with numpy: the pieces' bytes, zero bytes (never in a printable
    run) after each. Base 85 refuses a piece with a group past 2**32, and reads no byte
    from a last character alone; a refused piece (or one with a character not a digit)
    gives zeros.

    The pieces' digits are laid out in blocks, each piece from a block of its own and
    followed by a block of zeros; a short last block is padded (base 85 with its highest
    digit, as the standard library does; other bases with zero bits), and the bytes that
    padding makes are zeroed."""
    count = len(pieces)
    lengths = np.fromiter(map(len, pieces), dtype=np.int32, count=count)
    groups = (lengths + (block - 1)) // block
    first_group = np.cumsum(groups + 1, dtype=np.int32) - (groups + 1)
    source = np.frombuffer(
        "".join(pieces).encode("ascii", "replace").translate(digits), dtype=np.uint8
    )
    # Each character's place: its own, moved by how far its piece's first block is.
    shift = np.repeat(block * first_group - (np.cumsum(lengths, dtype=np.int32) - lengths), lengths)
    shift += np.arange(len(source), dtype=np.int32)
    values = np.full((int(groups.sum()) + count) * block, base - 1 if base == 85 else 0, np.uint8)
    values[shift] = source
    table = values.reshape(-1, block)
    table[first_group + groups] = 0
    last = first_group + groups - 1
    if base == 85:
        # A last character alone is no byte, and its padding must not refuse the piece.
        table[last[lengths % block == 1], 0] = 0
    total = table[:, 0].astype(np.uint64)
    for column in range(1, block):
        total *= base
        total += table[:, column]
    refused = np.zeros(count, dtype=bool)
    if 255 in source:
        refused[np.searchsorted(np.cumsum(lengths), np.flatnonzero(source == 255), "right")] = True
    if base == 85:
        over = np.flatnonzero(total > 0xFFFFFFFF)
        refused[np.searchsorted(first_group, over, "right") - 1] = True
    out = np.ascontiguousarray(total.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - size :])
    if refused.any():
        out[np.repeat(refused, groups + 1)] = 0
    bits = base.bit_length() - 1
    for short in range(1, block):
        whole = short - 1 if base == 85 else short * bits // 8
        out[last[lengths % block == short], whole:] = 0
    return out.tobytes()


def _groups_few(pieces: list[str], digits: bytes, base: int, block: int, size: int) -> bytes:
    """:func:`_groups_many` for a few long pieces, one at a time: laying the pieces out
    together costs more than a few calls when they are the same long token from each
    offset."""
    bits = base.bit_length() - 1
    out: list[bytes] = []
    for piece in pieces:
        values = np.frombuffer(piece.encode("ascii", "replace").translate(digits), np.uint8)
        if base == 85 and len(values) % block == 1:
            values = values[:-1]  # a last character alone is no byte
        if 255 in values:
            continue
        short = len(values) % block
        padded = np.full(-(-len(values) // block) * block, base - 1 if base == 85 else 0, np.uint8)
        padded[: len(values)] = values
        table = padded.reshape(-1, block)
        total = table[:, 0].astype(np.uint64)
        for column in range(1, block):
            total *= base
            total += table[:, column]
        if base == 85 and (total > 0xFFFFFFFF).any():
            continue
        raw = total.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - size :].tobytes()
        if short:
            whole = short - 1 if base == 85 else short * bits // 8
            raw = raw[: len(raw) - size + whole]
        out.append(raw)
    return b"\x00".join(out)


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


def _b64_many(pieces: list[str]) -> bytes:
    if len(pieces) <= _FEW_PIECES:
        return _each(_b64)(pieces)
    return _groups_many(pieces, _B64_DIGITS, 64, 4, 3)


def _b32_many(pieces: list[str]) -> bytes:
    if len(pieces) <= _FEW_PIECES:
        return _each(_b32)(pieces)
    return _groups_many(pieces, _B32_TABLE, 32, 8, 5)


def _hex_many(pieces: list[str]) -> bytes:
    if len(pieces) <= _FEW_PIECES:
        return _each(_hex)(pieces)
    return _groups_many(pieces, _HEX_TABLE, 16, 2, 1)


_B32_TABLE: Final = _digit_table(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", either_case=True)
_HEX_TABLE: Final = _digit_table(b"0123456789ABCDEF", either_case=True)


def _a85_many(pieces: list[str]) -> bytes:
    decode = _groups_few if len(pieces) <= _FEW_PIECES else _groups_many
    return decode(pieces, _A85_DIGITS, 85, 5, 4)


def _rfc1924_many(pieces: list[str]) -> bytes:
    decode = _groups_few if len(pieces) <= _FEW_PIECES else _groups_many
    return decode(pieces, _RFC1924_DIGITS, 85, 5, 4)


_SPACE: Final = re.compile(r"\A<~|~>\Z|\s")


def _deleted_bytes(drop: str) -> bytes:
    """The bytes of UTF-8 that ``drop`` (a class of characters) deletes: those of every
    character outside ASCII, and the ASCII characters it matches."""
    pattern = re.compile(drop)
    return bytes(b for b in range(256) if b >= 128 or pattern.fullmatch(chr(b)))


#: Each drop pattern's deletion in bytes, as :func:`_dropped` uses it.
_DELETED: Final = {
    _NOT_B64: _deleted_bytes(_NOT_B64.pattern),
    _NOT_B32: _deleted_bytes(_NOT_B32.pattern),
    _HEX_SKIP: _deleted_bytes(r"[^0-9A-Fa-f]"),
    _SPACE: _deleted_bytes(r"\s"),
}


def ascii85(text: str) -> str | None:
    """Ascii85 (Adobe's, ``<~ ~>`` optional)."""
    if not _base85_signed(text):
        return None
    return _decoded_tokens(text, _B85_TOKEN, _SPACE, 5, _a85_many, _base85_token)


def base85(text: str) -> str | None:
    """Base 85 in RFC 1924's alphabet (Python's and git's ``b85``)."""
    if not _base85_signed(text):
        return None
    return _decoded_tokens(text, _RFC1924_TOKEN, _SPACE, 5, _rfc1924_many, _base85_token)


_PERCENT: Final = re.compile(r"%[0-9A-Fa-f]{2}")


def percent(text: str) -> str | None:
    """Percent-encoding (URLs), ``+`` left as it is."""
    if not _PERCENT.search(text):
        return None
    return urllib.parse.unquote(text, errors="replace")


_ENTITY: Final = re.compile(r"&(?:#[0-9]+|#[xX][0-9A-Fa-f]+|[A-Za-z][A-Za-z0-9]*);?")


#: A numeric reference with more digits than any character's (leading zeros included).
_LONG_REFERENCE: Final = re.compile(r"&#(?:([0-9]{8,})|[xX]([0-9A-Fa-f]{7,}))")


def _short_reference(found: re.Match[str]) -> str:
    """A long numeric reference written short, as ``html.unescape`` reads it: its value,
    or past the last character one that reads as U+FFFD (the standard library refuses to
    read a number of more than 4,300 digits, and would fail the judge)."""
    decimal, hexadecimal = found.group(1), found.group(2)
    value = (decimal or hexadecimal).lstrip("0") or "0"
    if decimal:
        return "&#" + (value if len(value) <= 7 else "1114112")
    return "&#x" + (value if len(value) <= 6 else "110000")


def html_entities(text: str) -> str | None:
    """HTML character references, named and numeric."""
    if "&" not in text or not _ENTITY.search(text):
        return None
    return html.unescape(_LONG_REFERENCE.sub(_short_reference, text))


_ESCAPE: Final = re.compile(
    r"\\(?:u\{?([0-9A-Fa-f]{4,6})\}?|U([0-9A-Fa-f]{8})|x([0-9A-Fa-f]{2})|([0-7]{1,3})"
    r"|N\{([A-Z0-9 \-]+)\})"
)


def _unescaped(found: re.Match[str]) -> str:
    hexa = found.group(1) or found.group(2) or found.group(3)
    try:
        if hexa is not None:
            return chr(int(hexa, 16))
        if found.group(4) is not None:
            return chr(int(found.group(4), 8))
        return unicodedata.lookup(found.group(5))
    except (KeyError, ValueError, OverflowError):
        return " "


def escapes(text: str) -> str | None:
    """JSON, JavaScript and Python string escapes: ``\\u0051``, ``\\x51``, ``\\121``,
    ``\\N{...}``."""
    if "\\" not in text or not _ESCAPE.search(text):
        return None
    return _ESCAPE.sub(_unescaped, text)


_QP: Final = re.compile(r"=[0-9A-F]{2}")


def quoted_printable(text: str) -> str | None:
    """Quoted-printable (MIME): ``=51=55``, soft line breaks joined."""
    if "=" not in text or not _QP.search(text):
        return None
    return quopri.decodestring(text.encode("utf-8", errors="replace")).decode(errors="replace")


_NUMBER: Final = re.compile(r"[0-9]+")
#: Four or more numbers in a row, between separators. One pattern finds the runs for all
#: three bases; the look-behind is tested after the first digit, as a pattern starting with
#: one is slow: a run starts only where a number does (from inside a long number that is
#: not one, the search read the rest of it again, from each of its digits).
_NUMBER_RUN: Final = re.compile(r"[0-9](?<![0-9][0-9])[0-9]*+(?:[\s,;]++[0-9]++){3,}")
_OCTAL: Final = re.compile(r"0?[0-7]{2,3}")
_BINARY: Final = re.compile(r"[01]{7,8}")


def _code(number: str, base: int) -> str | None:
    if base == 8 and not _OCTAL.fullmatch(number):
        return None
    if base == 2 and not _BINARY.fullmatch(number):
        return None
    if base == 10 and len(number) > 3:
        return None
    char = chr(int(number, base))
    return char if " " <= char <= "~" else None


@lru_cache(maxsize=4)
def _number_runs(text: str) -> tuple[tuple[str, ...], ...]:
    """The runs of numbers in ``text``: found once for the three bases."""
    return tuple(tuple(_NUMBER.findall(run.group())) for run in _NUMBER_RUN.finditer(text))


def _code_runs(base: int) -> Callable[[str], str | None]:
    def decoded(text: str) -> str | None:
        classes = char_classes(text)
        if b"dsd" not in classes and b"dpd" not in classes and b"dpsd" not in classes:
            return None
        runs: list[str] = []
        for numbers in _number_runs(text):
            chars = [_code(n, base) for n in numbers]
            if sum(c is not None for c in chars) >= 4:
                runs.append("".join(c or " " for c in chars))
        return "\n".join(runs) if runs else None

    return decoded


decimal_codes: Final = _code_runs(10)
decimal_codes.__doc__ = "ASCII codes in decimal: ``81 85 73 76 76``."
octal_codes: Final = _code_runs(8)
octal_codes.__doc__ = "ASCII codes in octal: ``121 125 111``."
binary_codes: Final = _code_runs(2)
binary_codes.__doc__ = "ASCII codes in binary: ``01010001 01010101``."


def views() -> Iterator[tuple[str, Callable[[str], str | None]]]:
    """Every decoding view, by name, in the order the judge tries them."""
    yield from (
        ("percent", percent),
        ("html-entities", html_entities),
        ("escapes", escapes),
        ("quoted-printable", quoted_printable),
        ("decimal-codes", decimal_codes),
        ("octal-codes", octal_codes),
        ("binary-codes", binary_codes),
        ("hex", hex_text),
        ("base64", base64_text),
        ("base32", base32),
        ("base85", base85),
        ("ascii85", ascii85),
    )
