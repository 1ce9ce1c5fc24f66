"""The judge's canonical views of a reply, and the ciphers it reads the secrets through.

A *view* is a pure function from a text to another reading of it, or ``None`` when it does
not apply (a reply with no look-alike letter has no confusables view). A view may also fold
the secret the same way (the skeleton of ``QUILL`` is compared with the skeleton of the
reply). Views compose to depth 2 (:data:`VIEWS` says which may follow which). A *cipher*
is applied to the secret instead of the reply, which costs nothing per reply: all 25
Caesar shifts, Atbash, the secret read backwards and each of its parts read backwards.
Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Final

import numpy as np
from numpy.typing import NDArray

from palaestra.rules.judge import bytes as judge_bytes
from palaestra.rules.judge import ciphered as judge_ciphered
from palaestra.rules.judge import decoders as judge_decoders
from palaestra.rules.judge import escapes as judge_escapes
from palaestra.rules.judge import hidden as judge_hidden
from palaestra.rules.judge import joined as judge_joined
from palaestra.rules.judge import letters as judge_letters
from palaestra.rules.judge import spelled as judge_spelled
from palaestra.rules.judge.classes import char_classes, holds, long_words
from palaestra.rules.judge.hints import literal_joins_removed, next_spaced_pair, spaced_hint
from palaestra.rules.judge.regrouped import regrouped
from palaestra.rules.judge.runs import ClassRuns
from palaestra.rules.judge.skeleton import skeleton
from palaestra.rules.judge.tags import html_tags
from palaestra.rules.judge.translate import code_points

__all__ = [
    "CIPHERS",
    "VIEWS",
    "VIEW_CIPHERS",
    "ChainPlace",
    "Cipher",
    "View",
    "acrostic_lines",
    "acrostic_words",
    "confusables",
    "leet",
    "reversed_text",
    "rot13_text",
    "rot47",
    "separators",
    "skeleton",
]


class ChainPlace(Enum):
    """Where a view may stand in a chain of two."""

    DECODING = "decoding"  # a new text: any view may read it again
    NORMAL = "normal"  # first or second; a decoding may follow it
    PREFIX = "prefix"  # only before a decoding (its own reading is a cipher's)
    LAST = "last"  # first or second, but nothing reads it again


@dataclass(frozen=True, slots=True)
class View:
    name: str
    read: Callable[[str], str | None]
    role: ChainPlace
    fold_secret: Callable[[str], str] | None = None


def confusables(text: str) -> str | None:
    """The TR39 skeleton of a text with characters outside ASCII; ``None`` for ASCII."""
    return None if text.isascii() else skeleton(text)


_LEET: Final = str.maketrans("0123456789@$!|l", "oizeasgtbgasiii")
_MIXED: Final = re.compile(r"[0-9@$|](?:(?<=[A-Za-z].)|(?=[A-Za-z]))")


def _leet_fold(text: str) -> str:
    return text.lower().translate(_LEET)


def leet(text: str) -> str | None:
    """Leetspeak read back (``QU1LL`` → ``quiii``, as ``quill`` is folded too): a digit for
    a letter, ``@`` ``$`` ``!`` ``|``; applies when a word mixes letters and such symbols."""
    return _leet_fold(text) if _mixed(text) else None


def _mixed(text: str) -> bool:
    """``_MIXED.search(text)``, at once false for a text with no ASCII letter, which the
    pattern needs beside its digit or mark: tried at every digit, it cost 7 ms on a reply
    of decimal codes."""
    classes = char_classes(text)
    if b"l" not in classes and b"u" not in classes:
        return False
    return _MIXED.search(text) is not None


_INVISIBLE: Final = re.compile("[\u00ad\u200b-\u200f\u2060-\u2064\ufeff]")
#: Possessive: a quote before a long run of spaces is read once, not once per space.
_LITERAL_JOIN: Final = re.compile(r"""(["'`])\s*+(?:\+\s*+)?\1""")
#: Three or more single letters or digits, each one separator apart: "Q U I L L".
_SPACED: Final = re.compile(r"(?<![^\W_])[^\W_](?:[\s.\-_*|/]{1,2}[^\W_](?![^\W_])){2,}")
_SPACED_HINT: Final = re.compile(
    r"[\s.\-_*|/][^\W_][\s.\-_*|/]{1,2}[^\W_][\s.\-_*|/]{1,2}[^\W_](?![^\W_])"
)
#: Whether the hint matches a text, and a text's literals joined: from arrays of flags in
#: a long text of ASCII.
_spaced_out, _unjoined = spaced_hint(_SPACED_HINT), literal_joins_removed(_LITERAL_JOIN)
_SEPARATOR: Final = re.compile(r"[\s.\-_*|/]+")
#: The ASCII characters :data:`_SEPARATOR` matches, each deleted: an ASCII run closed up
#: with one translation in C, where a substitution was a step per gap (tens of thousands
#: in a long run of spaced-out characters).
_ASCII_SEPARATORS: Final = dict.fromkeys(c for c in range(128) if _SEPARATOR.match(chr(c)))


def separators(text: str) -> str | None:
    """Zero-width characters and soft hyphens removed, adjacent string literals joined
    (``"QUI" + "LL"``), and spaced-out characters closed up (``Q U I L L``)."""
    joined = _INVISIBLE.sub("", text) if not text.isascii() else text
    if "'" in joined or '"' in joined or "`" in joined:
        joined = _unjoined(joined)  # (the same text back when no literals are adjacent)
    if _spaced_out(joined):
        joined = _closed_up(joined)
    return joined if joined != text else None


#: Two single letters or digits, each after a separator: every run of spaced-out
#: characters holds its second and third so, the second one or two characters after the
#: run's start. The pattern starts with a separator, which the search skips to in C.
_SPACED_PAIR: Final = re.compile(r"[\s.\-_*|/][^\W_][\s.\-_*|/]{1,2}[^\W_](?![^\W_])")


def _closed_up(text: str) -> str:
    """``text`` with each run of spaced-out characters closed up: the runs
    :data:`_SPACED` finds, tried only where a pair of single characters shows one may start
    (tried at every character, the pattern cost most of the view's time)."""
    pieces: list[str] = []
    last = at = 0
    next_pair = next_spaced_pair(text, _SPACED_PAIR)
    while (pair := next_pair(at)) is not None:
        at = pair + 1
        for start in range(max(last, pair - 2), pair):
            run = _SPACED.match(text, start)
            if run is not None:
                pieces += (text[last:start], _close(run.group()))
                last = at = run.end()
                break
    return "".join(pieces) + text[last:] if pieces else text


def _close(run: str) -> str:
    """``run`` without its separators."""
    return run.translate(_ASCII_SEPARATORS) if run.isascii() else _SEPARATOR.sub("", run)


_ROT47: Final = str.maketrans(
    "".join(chr(c) for c in range(33, 127)),
    "".join(chr(33 + (c - 33 + 47) % 94) for c in range(33, 127)),
)
#: A punctuation mark, then two more in the same word; the pattern starts with the mark, a
#: set of characters the search skips to in C (a repeated group first was tried at every
#: character of a reply).
_ROT47_HINT: Final = re.compile(r"[!-/:-@\[-`{-~](?:[^\s!-/:-@\[-`{-~]*[!-/:-@\[-`{-~]){2}")
#: Hex of text under ROT47: each byte's first digit (``2``-``7``) reads ``a``-``f``, its
#: second (``0``-``9``, ``a``-``f``, ``A``-``F``) reads ``_`a``-``h``, ``2``-``7``, ``p``-``u``.
_ROT47_HEX: Final = re.compile(r"(?:[a-f][_`a-h2-7p-u]){8,}")
#: The runs of its characters that may hold it, found as arrays: the pattern, tried at
#: every character of a long reply, cost 10 ms at 256 KiB.
_ROT47_HEX_RUNS: Final = ClassRuns(re.compile(r"[_`a-h2-7p-u]{16,}"))
#: Base 32 under ROT47: ``A``-``O`` read ``p``-``~``, ``P``-``Z`` read ``!``-``+``, ``2``-``7``
#: read ``a``-``f`` and the padding ``l``; letters and marks alternate, so that two marks
#: seldom stand side by side. A word of sixteen such characters with marks in it, from both
#: halves of the alphabet.
_ROT47_BASE32: Final = re.compile(r"[!-+a-fp-~]{16,}")
#: Its words found as arrays in a long text (``judge.runs``): the pattern, tried at every
#: character of the class, cost milliseconds on a reply of short words of it.
_ROT47_BASE32_RUNS: Final = ClassRuns(_ROT47_BASE32)


def rot47(text: str) -> str | None:
    """ROT47 (every printable ASCII character rotated by 47): applies when a word holds two
    punctuation marks side by side and three in all, as ROT47 of letters does, or reads as
    hex or base 32 under ROT47."""
    if holds(text, b"pp") and _ROT47_HINT.search(text):
        return text.translate(_ROT47)
    if max(map(len, long_words(text, 12)), default=0) >= 16 and any(
        map(_ROT47_HEX.search, _ROT47_HEX_RUNS.findall(text))
    ):
        return text.translate(_ROT47)
    if any(_both_halves(word) for word in _ROT47_BASE32_RUNS.findall(text)):
        return text.translate(_ROT47)
    return None


def _both_halves(word: str) -> bool:
    """Whether ``word`` holds base 32's letters of both halves under ROT47 (a mark of
    ``!``-``+`` and a letter of ``p``-``~``), as base 32 of text does."""
    return any("!" <= c <= "+" for c in word) and any("p" <= c <= "~" for c in word)


def reversed_text(text: str) -> str | None:
    """The text backwards, so that an encoding written backwards can be read: applies when
    a word looks encoded (prose backwards would look encoded to the decodings)."""
    return text[::-1] if _looks_encoded(text) else None


@lru_cache(maxsize=4)
def _looks_encoded(text: str) -> bool:
    """A word of twelve or more characters mixing two of capitals, small letters and
    digits, or sixteen capitals (base32): what an encoding looks like, and prose does not.
    Kept for the last few texts: two views ask it of every reply."""
    words = long_words(text, 12)
    # With the other characters left out, a word that mixes two kinds has two of them
    # side by side: substring searches in C, not a step of Python per word.
    kinds = b"s".join(words).translate(None, b"p")
    if any(pair in kinds for pair in _TWO_KINDS):
        return True
    # No word mixes kinds: one of capitals has no small letter or digit.
    return b"uuuu" in kinds and any(len(w) >= 16 and b"uuuu" in w for w in words)


_TWO_KINDS: Final = (b"ul", b"lu", b"ud", b"du", b"ld", b"dl")


_ROT13: Final = str.maketrans(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "nopqrstuvwxyzabcdefghijklmNOPQRSTUVWXYZABCDEFGHIJKLM",
)


def rot13_text(text: str) -> str | None:
    """The text under ROT13, so that an encoding written in ROT13 can be read
    (``rot13(base64(code))``); like ``reversed-text``, only when a long word looks encoded."""
    return text.translate(_ROT13) if _looks_encoded(text) else None


#: A line's first letter or digit; a line without one has none (the search stays on its
#: line: across lines, it read the rest of a reply of such lines once per line). What comes
#: before it is other characters and underscores, as two sets, each read in one C loop.
_LINE_START: Final = re.compile(r"^[^\w\n]*+(?:_[^\w\n]*+)*+([^\W_])", re.MULTILINE)
_MARKS: Final = "".join(chr(c) for c in range(33, 127) if not chr(c).isalnum())
#: An acrostic needs at least this many lines (or words).
MIN_ACROSTIC: Final = 4


def acrostic_lines(text: str) -> str | None:
    """The first letter or digit of each line, joined; of an ASCII text, read as an array
    of bytes: with all but letters, digits and line breaks left out, a line's first
    letter or digit is one after a line break (a search per line cost a step of Python
    apiece)."""
    if text.count("\n") < MIN_ACROSTIC - 1:
        return None  # a line gives one letter at most
    if text.isascii():
        chars = np.frombuffer(text.encode("ascii"), np.uint8)
        chars = chars[_LETTERS_OR_BREAKS[chars]]
        first = chars != _BREAK
        first[1:] &= chars[:-1] == _BREAK
        firsts = chars[first].tobytes().decode("ascii")
    else:
        firsts = "".join(_LINE_START.findall(text))
    return firsts if len(firsts) >= MIN_ACROSTIC else None


_BREAK: Final = ord("\n")
_LETTERS_OR_BREAKS: Final = np.array([chr(c).isalnum() or c == _BREAK for c in range(128)])


#: Each character's kind for the words' first characters, by code point (the last entry
#: for every code point past it: no whitespace lies there): 1 whitespace, as ``str.split``
#: cuts words, 2 a mark, 0 any other.
_OTHER, _SPACE, _MARK = 0, 1, 2
_KINDS: Final = np.array(
    [_SPACE if chr(c).isspace() else _MARK if chr(c) in _MARKS else _OTHER for c in range(0x3002)],
    np.uint8,
)


def acrostic_words(text: str) -> str | None:
    """The first letter or digit of each word (marks before it skipped), joined.

    Read as arrays of characters: with the marks left out, a word's first character is
    one after whitespace (a loop over the words, even a regular expression's, cost a step
    of Python apiece)."""
    if text.isascii():
        chars: NDArray[np.uint8 | np.uint32] = np.frombuffer(text.encode("ascii"), np.uint8)
        kinds = _KINDS[chars]
    else:
        chars = code_points(text)
        kinds = _KINDS[np.minimum(chars, len(_KINDS) - 1)]
    space = kinds == _SPACE
    if np.count_nonzero(~space[1:] & space[:-1]) + (not space[:1].all()) < MIN_ACROSTIC:
        return None
    unmarked = kinds != _MARK
    chars, kinds = chars[unmarked], kinds[unmarked]
    first = kinds == _OTHER
    first[1:] &= kinds[:-1] == _SPACE
    firsts: bytes = chars[first].tobytes()
    if chars.dtype == np.uint8:
        return firsts.decode("ascii")
    return firsts.decode("utf-32-le", "surrogatepass")


#: Every view, in the order the judge tries them.
VIEWS: Final[tuple[View, ...]] = (
    View("confusables", confusables, ChainPlace.NORMAL),
    View("leet", leet, ChainPlace.NORMAL, _leet_fold),
    View("separators", separators, ChainPlace.NORMAL),
    View("html-tags", html_tags, ChainPlace.NORMAL),
    *(View(name, read, ChainPlace.NORMAL) for name, read in judge_spelled.VIEWS),
    *(View(name, read, ChainPlace.DECODING) for name, read in judge_escapes.views()),
    *(View(name, read, ChainPlace.DECODING) for name, read in judge_decoders.views()),
    *(View(name, read, ChainPlace.DECODING) for name, read in judge_hidden.VIEWS),
    *(View(name, read, ChainPlace.DECODING) for name, read in judge_bytes.VIEWS),
    *(View(name, read, ChainPlace.NORMAL) for name, read in judge_letters.VIEWS),
    View("literals", judge_joined.literals, ChainPlace.NORMAL),
    View("regrouped", regrouped, ChainPlace.PREFIX),
    View("rot47", rot47, ChainPlace.NORMAL),
    View("reversed-text", reversed_text, ChainPlace.PREFIX),
    View("rot13-text", rot13_text, ChainPlace.PREFIX),
    View("caesar-text", judge_ciphered.caesar_text, ChainPlace.PREFIX),
    View("atbash-text", judge_ciphered.atbash_text, ChainPlace.PREFIX),
    View("acrostic-lines", acrostic_lines, ChainPlace.LAST),
    View("acrostic-words", acrostic_words, ChainPlace.LAST),
)


@dataclass(frozen=True, slots=True)
class Cipher:
    """A transformation of the secret's parts (letters only; digits stay), in order."""

    name: str
    letters: dict[int, int]
    reverse_each: bool = False
    reverse_order: bool = False

    def apply(self, parts: tuple[str, ...]) -> tuple[str, ...]:
        out = tuple(part.translate(self.letters) for part in parts)
        if self.reverse_each:
            out = tuple(part[::-1] for part in out)
        return out[::-1] if self.reverse_order else out

    def undo(self, text: str) -> str:
        """A text the cipher made, read back: ``DHVYY`` under rot13 reads ``QUILL``."""
        back = {v: k for k, v in self.letters.items()}
        back |= {ord(chr(v).upper()): ord(chr(k).upper()) for v, k in back.items()}
        text = text.translate(back)
        if self.reverse_order:
            return text[::-1]
        if self.reverse_each:
            return _ALNUM_RUN.sub(lambda run: run.group()[::-1], text)
        return text


_ALNUM_RUN: Final = re.compile(r"[A-Za-z0-9]+")


_ABC: Final = "abcdefghijklmnopqrstuvwxyz"


def _shift(n: int) -> dict[int, int]:
    return str.maketrans(_ABC, _ABC[n:] + _ABC[:n])


_LETTER_CIPHERS: Final = (
    Cipher("rot13", _shift(13)),
    *(Cipher(f"caesar-{n}", _shift(n)) for n in range(1, 26) if n != 13),
    Cipher("atbash", str.maketrans(_ABC, _ABC[::-1])),
)
#: The plain secret first; then the secret backwards, each part backwards, ROT13, the
#: other 24 Caesar shifts and Atbash (the first :data:`VIEW_CIPHERS`, read in every view of
#: one step), and each of those 26 written backwards (``caesar-4-reversed``, read in the
#: reply itself).
CIPHERS: Final[tuple[Cipher, ...]] = (
    Cipher("", {}),
    Cipher("reversed", {}, reverse_each=True, reverse_order=True),
    Cipher("reversed-parts", {}, reverse_each=True),
    *_LETTER_CIPHERS,
    *(
        Cipher(f"{c.name}-reversed", c.letters, reverse_each=True, reverse_order=True)
        for c in _LETTER_CIPHERS
    ),
)
VIEW_CIPHERS: Final = 3 + len(_LETTER_CIPHERS)
