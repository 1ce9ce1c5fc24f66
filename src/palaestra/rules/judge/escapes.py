"""The judge's views of escaped and numbered text, read back as the text it stands for.

``percent`` (URLs), ``html-entities`` (named and numeric references), ``escapes`` (JSON,
JavaScript and Python string escapes), ``quoted-printable`` (MIME), and ASCII codes in
decimal, octal and binary. Each view returns ``None`` at once when its mark (``%``, ``&``,
a backslash, ``=``, runs of numbers) is not in the text. Pure: no I/O.
"""

from __future__ import annotations

import html
import html.entities
import quopri
import re
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterator
from functools import cache, lru_cache
from itertools import product, repeat
from typing import Final

import numpy as np

from palaestra.rules.judge.classes import holds
from palaestra.rules.judge.digits import GROUPS, hex_many
from palaestra.rules.judge.runs import true_runs
from palaestra.rules.judge.translate import code_points

__all__ = [
    "binary_codes",
    "decimal_codes",
    "escapes",
    "html_entities",
    "octal_codes",
    "percent",
    "quoted_printable",
    "views",
]


_PERCENT: Final = re.compile(r"%[0-9A-Fa-f]{2}")


def percent(text: str) -> str | None:
    """Percent-encoding (URLs), ``+`` left as it is."""
    if not _PERCENT.search(text):
        return None
    return unquoted(text)


def unquoted(text: str) -> str:
    """``urllib.parse.unquote(text, errors="replace")``; of ASCII, with arrays: every ``%``
    and two hex digits after it is the byte they write, and the bytes are read as UTF-8
    (``unquote`` reads ASCII text so, a step of Python per ``%``: 1.7 ms on random base 85,
    20 ms on a reply of escapes)."""
    if not text.isascii():
        return urllib.parse.unquote(text, errors="replace")
    raw = np.frombuffer(text.encode("ascii"), np.uint8)
    # An escape's digits hold no ``%``: escapes never overlap, whatever their order.
    marks = np.flatnonzero(raw[:-2] == ord("%"))
    high, low = _HEX_VALUE[raw[marks + 1]], _HEX_VALUE[raw[marks + 2]]
    whole = (high < 16) & (low < 16)
    marks = marks[whole]
    out = raw.copy()
    out[marks] = high[whole] << 4 | low[whole]
    kept = np.ones(len(raw), bool)
    kept[marks + 1] = False
    kept[marks + 2] = False
    return out[kept].tobytes().decode("utf-8", "replace")


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


def _read_names() -> str:
    """What a named reference that ``html.unescape`` reads is, as a pattern to look ahead
    with: a name it knows ended by ``;`` (every such name is a letter, then letters and
    digits, at most 32 in all: its run), or one of the old names that need no ``;`` at its
    start (it reads the longest such start of a run). It leaves any other as it is."""
    old = sorted((name for name in html.entities.html5 if not name.endswith(";")), key=len)
    by_first: dict[str, list[str]] = {}
    for name in reversed(old):
        by_first.setdefault(name[0], []).append(re.escape(name[1:]))
    starts = "|".join(f"{first}(?:{'|'.join(rests)})" for first, rests in sorted(by_first.items()))
    return f"{starts}|[A-Za-z][A-Za-z0-9]{{0,31}};"


#: The references ``html.unescape`` reads (its own pattern), a named one only when it reads
#: it (:func:`_read_names`): any other it leaves as it is, and a call apiece for those cost
#: 6 ms on random base 85. One group, the whole reference: ``split`` keeps them.
_REFERENCE: Final = re.compile(
    r"(&(?:#[0-9]+;?|#[xX][0-9a-fA-F]+;?|(?=" + _read_names() + r")[^\t\n\f <&#;]{1,32};?))"
)
#: Past this many distinct references, and one in four of those found, the text is read
#: by ``html.unescape`` whole: a call per distinct one would cost more.
_MANY_REFERENCES: Final = 1024


def html_entities(text: str) -> str | None:
    """HTML character references, named and numeric, as ``html.unescape`` reads them:
    each distinct one read once, the others left as they are."""
    if "&" not in text or not _ENTITY.search(text):
        return None
    text = _LONG_REFERENCE.sub(_short_reference, text)
    pieces = _REFERENCE.split(text)
    references = pieces[1::2]
    distinct = set(references)
    if len(distinct) > _MANY_REFERENCES and len(distinct) * 4 > len(references):
        return html.unescape(text)
    read = {reference: html.unescape(reference) for reference in distinct}
    pieces[1::2] = map(read.__getitem__, references)
    return "".join(pieces)


_ESCAPE: Final = re.compile(
    r"\\(?:u\{?([0-9A-Fa-f]{4,6})\}?|U([0-9A-Fa-f]{8})|x([0-9A-Fa-f]{2})|([0-7]{1,3})"
    r"|N\{([A-Z0-9 \-]+)\})"
)


#: :data:`_ESCAPE` with the whole escape as its one group: ``split`` keeps the escapes.
_ESCAPE_SPLIT: Final = re.compile("(" + re.sub(r"\((?!\?)", "(?:", _ESCAPE.pattern) + ")")


def _unescaped(escape: str) -> str:
    found = _ESCAPE.fullmatch(escape)
    if found is None:
        return escape
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
    if len(text) > _LONG_TEXT and (unescaped := _x_escapes(text)) is not None:
        return unescaped
    # Each distinct escape read once: a call per escape cost 30 ms on a reply of them.
    pieces = _ESCAPE_SPLIT.split(text)
    escaped = pieces[1::2]
    read = {escape: _unescaped(escape) for escape in set(escaped)}
    pieces[1::2] = map(read.__getitem__, escaped)
    return "".join(pieces)


#: A text longer than this whose escapes are all ``\\xHH`` is read with arrays
#: (:func:`_x_escapes`).
_LONG_TEXT: Final = 4096
#: Each byte's value as a hex digit, 255 for the others (the hex decoding's own table).
_HEX_VALUE: Final = np.frombuffer(GROUPS[hex_many][0], np.uint8)
#: What may follow a backslash to begin an escape other than ``\\xHH``.
_OTHER_ESCAPES: Final = np.array([ord(c) for c in "uUN01234567"], np.uint32)


def _x_escapes(text: str) -> str | None:
    """:func:`escapes` of a text whose escapes are all ``\\xHH`` (a backslash, an ``x``,
    two hex digits: what the pattern finds at every such backslash, none of which an
    escape before it holds), each replaced by its character at once; ``None`` when
    another escape may be in it. The pattern, at every escape of a long reply of them,
    cost 16 ms at 256 KiB."""
    points = code_points(text)
    slash = np.flatnonzero(points == ord("\\"))
    ahead = np.append(points, np.zeros(3, np.uint32))  # no escape runs past the end
    digits = _HEX_VALUE[np.minimum(ahead, 255)]  # past 255 no hex digit either
    high, low = digits[slash + 2].astype(np.uint32), digits[slash + 3]
    escape = (ahead[slash + 1] == ord("x")) & (high < 16) & (low < 16)
    if np.isin(ahead[slash[~escape] + 1], _OTHER_ESCAPES).any():
        return None
    starts = slash[escape]
    read = points.copy()
    read[starts] = high[escape] * 16 + low[escape]
    kept = np.ones(len(points), bool)
    for after in (1, 2, 3):
        kept[starts + after] = False
    return read[kept].tobytes().decode("utf-32-le", "surrogatepass")


_QP: Final = re.compile(r"=[0-9A-F]{2}")


def quoted_printable(text: str) -> str | None:
    """Quoted-printable (MIME): ``=51=55``, soft line breaks joined."""
    if "=" not in text or not _QP.search(text):
        return None
    return quopri.decodestring(text.encode("utf-8", errors="replace")).decode(errors="replace")


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
    """The runs of numbers in ``text``: found once for the three bases. A run is numbers
    between separators (whitespace, ``,``, ``;``), so with the marks made spaces it splits
    into its numbers (``str.split`` and the pattern's ``\\s`` take the same whitespace); a
    pattern finding each number cost three times more on a reply of codes."""
    if len(text) > _LONG_TEXT and text.isascii():
        return _number_runs_long(text)
    return tuple(
        tuple(run.group().translate(_MARKS_AS_SPACES).split()) for run in _NUMBER_RUN.finditer(text)
    )


#: Each ASCII character as what :data:`_NUMBER_RUN` makes of it: 1 a digit, 2 a separator.
_NUMBER_KINDS: Final = bytes(
    1 if chr(b).isdigit() else 2 if re.fullmatch(r"[\s,;]", chr(b)) else 0 for b in range(128)
) + bytes(128)


def _number_runs_long(text: str) -> tuple[tuple[str, ...], ...]:
    """:func:`_number_runs` of a long ASCII text, with arrays: its numbers, and where only
    separators stand between two of them, so that four or more so joined make a run (the
    pattern, started at every digit of a reply of hex, cost 10 ms at 256 KiB)."""
    kinds = np.frombuffer(text.encode("ascii").translate(_NUMBER_KINDS), np.uint8)
    starts, ends = true_runs(kinds == 1)
    if len(starts) < 4:
        return ()
    others = np.concatenate(([0], np.cumsum(kinds != 2)))  # neither digit nor separator
    # Number k and the next are joined when what lies between them is all separators
    # (never empty: numbers are whole runs of digits).
    joined = others[starts[1:]] - others[ends[:-1]] == 0
    # Chains of joined numbers, each from its first join to the one after its last.
    first, last = true_runs(joined)
    long = np.flatnonzero(last - first >= 3)
    runs = zip(starts[first[long]].tolist(), ends[last[long]].tolist(), strict=True)
    return tuple(tuple(text[start:end].translate(_MARKS_AS_SPACES).split()) for start, end in runs)


_MARKS_AS_SPACES: Final = str.maketrans(",;", "  ")


@cache
def _codes(base: int) -> dict[str, str]:
    """Every number :func:`_code` reads as a character in ``base``, with its character: a
    lookup per number, where a call per number cost 40 ms on a reply of codes."""
    alphabet, lengths = {10: ("0123456789", (1, 2, 3)), 8: ("01234567", (2, 3, 4))}.get(
        base, ("01", (7, 8))
    )
    numbers = ("".join(n) for length in lengths for n in product(alphabet, repeat=length))
    return {n: char for n in numbers if (char := _code(n, base)) is not None}


def _code_runs(base: int) -> Callable[[str], str | None]:
    def decoded(text: str) -> str | None:
        if not holds(text, b"dsd", b"dpd", b"dpsd"):
            return None
        codes = _codes(base)
        runs: list[str] = []
        for numbers in _number_runs(text):
            if sum(map(codes.__contains__, numbers)) >= 4:
                runs.append("".join(map(codes.get, numbers, repeat(" "))))
        return "\n".join(runs) if runs else None

    return decoded


decimal_codes: Final = _code_runs(10)
decimal_codes.__doc__ = "ASCII codes in decimal: ``81 85 73 76 76``."
octal_codes: Final = _code_runs(8)
octal_codes.__doc__ = "ASCII codes in octal: ``121 125 111``."
binary_codes: Final = _code_runs(2)
binary_codes.__doc__ = "ASCII codes in binary: ``01010001 01010101``."


def views() -> Iterator[tuple[str, Callable[[str], str | None]]]:
    """Every view of this module, by name, in the order the judge tries them."""
    yield from (
        ("percent", percent),
        ("html-entities", html_entities),
        ("escapes", escapes),
        ("quoted-printable", quoted_printable),
        ("decimal-codes", decimal_codes),
        ("octal-codes", octal_codes),
        ("binary-codes", binary_codes),
    )
