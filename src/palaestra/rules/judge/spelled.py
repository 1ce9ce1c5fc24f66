"""The judge's spelled-out views: numbers as words, the NATO/ICAO alphabet, Morse code.

Each view is a pure function from a text to the text with the spelled-out runs written
plainly, or ``None`` when there is no such run: ``four eight two one`` and
``forty-eight twenty-one`` read ``4821``; ``Quebec Uniform India Lima Lima`` reads
``quill``; ``--.- ..- .. .-.. .-..`` reads ``quill``. Pure: no I/O.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Final

import numpy as np

from palaestra.rules.judge.present import automaton, present
from palaestra.rules.judge.runs import true_runs

__all__ = ["count_in", "morse", "nato", "number_words", "words_in"]

_UNITS: Final = {
    "zero": 0, "oh": 0, "nought": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_TENS: Final = {
    "twenty": 20, "thirty": 30, "forty": 40, "fourty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
_SCALES: Final = {"hundred": 100, "thousand": 1000}
_UNIT_DIGITS: Final = {word: str(value) for word, value in _UNITS.items()}
_RUN_SEPARATORS: Final = str.maketrans(",-", "  ")
_NUMBER_WORDS: Final = frozenset(w.encode() for w in [*_UNITS, *_TENS, *_SCALES])


def _alternation(words: frozenset[str]) -> str:
    return "|".join(sorted(words, key=lambda w: (-len(w), w)))


@lru_cache(maxsize=512)
def _number_run(words: frozenset[str]) -> re.Pattern[str]:
    """Two or more of ``words`` in a row ("and" may join them: "one hundred and five").
    Built from the number words a text holds: one alternation of every number word
    would be tried at every word of every reply."""
    word = _alternation(words)
    return re.compile(rf"(?:{word})(?:[\s,\-]+(?:and[\s\-]+)?(?:{word}))+(?![a-z])")


@lru_cache(maxsize=512)
def _second_number(words: frozenset[str]) -> re.Pattern[str]:
    """What every run of :func:`_number_run` holds: the first separator after its first
    word (a letter before it: every number word ends in one), the rest, and its second
    word, which no letter follows (a separator or the run's end does). Started with the
    separator, which the search skips to in C, where the run's pattern is tried at every
    character: 5 ms on a reply of random base 85, which holds a few number words."""
    word = _alternation(words)
    sep = r"[\s,\-]"
    return re.compile(rf"{sep}(?<=[a-z]{sep}){sep}*(?:and[\s\-]+)?(?:{word})(?![a-z])")


_NOT_LETTER: Final = bytes(b if chr(b).isalpha() and b < 128 else 32 for b in range(256))


@lru_cache(maxsize=2)
def _spaced_words(text: str) -> bytes:
    """``text`` lower-cased, every character but an ASCII letter a space, a space before and
    after: each word of it (a run of letters) stands between spaces. Kept for the last
    texts (the number words, the NATO alphabet and the letter names read the same reply)."""
    return b" " + text.lower().encode("ascii", "replace").translate(_NOT_LETTER) + b" "


def _spaced(vocabulary: frozenset[bytes]) -> tuple[bytes, ...]:
    """Each word of ``vocabulary`` between spaces, in order."""
    return tuple(b" " + word + b" " for word in sorted(vocabulary))


def words_in(text: str, vocabulary: frozenset[bytes]) -> frozenset[bytes]:
    """The words of ``vocabulary`` that are words of ``text`` (its runs of ASCII letters,
    lower-cased), found in C (:func:`~.present.present`, each word between spaces):
    splitting a long reply into its words, tens of thousands, cost 10 ms."""
    if not vocabulary:
        return frozenset()
    patterns = _spaced(vocabulary)
    found = present(automaton(patterns), patterns, _spaced_words(text))
    return frozenset(pattern[1:-1] for pattern in found)


def count_in(text: str, vocabulary: frozenset[bytes]) -> int:
    """How many words of ``text`` are words of ``vocabulary``."""
    if not vocabulary:
        return 0
    patterns = _spaced(vocabulary)
    # Overlapping: two words in a row share the space between them.
    matches = automaton(patterns).find_matches_as_indexes(_spaced_words(text), overlapping=True)
    return len(matches)


def _present(text: str, vocabulary: frozenset[bytes]) -> frozenset[str]:
    """The words of ``vocabulary`` in ``text`` (lower-cased)."""
    return frozenset(word.decode() for word in words_in(text, vocabulary))


def _glued(run: re.Match[str]) -> bool:
    """Whether the run starts inside a word ("someone two"): the patterns do not test that
    first, since a look-behind tried at every character is what makes a pattern slow."""
    return run.start() > 0 and run.string[run.start() - 1].isalpha()


def _cardinal(words: list[str]) -> int:
    total = current = 0
    for word in words:
        if word in _SCALES:
            current = max(current, 1) * _SCALES[word]
            if word == "thousand":
                total, current = total + current, 0
        else:
            current += _UNITS.get(word, _TENS.get(word, 0))
    return total + current


def _digits(words: list[str]) -> str:
    """``four eight two one`` as ``4821``, ``forty-eight twenty-one`` as ``4821``."""
    if not _SCALES.keys().isdisjoint(words):
        return str(_cardinal(words))
    if _TENS.keys().isdisjoint(words):
        # Units alone, each its digits, read in C: a run of a long reply's words (tens of
        # thousands) took a step of Python apiece.
        return "".join(map(_UNIT_DIGITS.__getitem__, words))
    out: list[str] = []
    at = 0
    while at < len(words):
        word = words[at]
        if word in _TENS:
            unit = _UNITS.get(words[at + 1], 10) if at + 1 < len(words) else 10
            out.append(str(_TENS[word] + (unit if unit < 10 else 0)))
            at += 2 if unit < 10 else 1
        else:
            out.append(str(_UNITS[word]))
            at += 1
    return "".join(out)


def number_words(text: str) -> str | None:
    """Runs of English number words as digits."""

    def digits(run: re.Match[str]) -> str:
        if _glued(run):
            return run.group()
        # A run is its words, "and" among them, between whitespace, commas and dashes.
        words = run.group().translate(_RUN_SEPARATORS).split()
        return _digits([w for w in words if w != "and"] if "and" in words else words)

    present = _present(text, _NUMBER_WORDS)
    if len(present) < 2:
        return None  # a run of one word said again ("one one") is not read as a number
    lower = text.lower()
    if not _second_number(present).search(lower):
        return None
    written, count = _number_run(present).subn(digits, lower)
    return written if count else None


_NATO_LETTERS: Final = {
    "alfa": "a", "alpha": "a", "bravo": "b", "charlie": "c", "delta": "d", "echo": "e",
    "foxtrot": "f", "golf": "g", "hotel": "h", "india": "i", "juliett": "j", "juliet": "j",
    "kilo": "k", "lima": "l", "mike": "m", "november": "n", "oscar": "o", "papa": "p",
    "quebec": "q", "romeo": "r", "sierra": "s", "tango": "t", "uniform": "u", "victor": "v",
    "whiskey": "w", "whisky": "w", "xray": "x", "x-ray": "x", "yankee": "y", "zulu": "z",
}  # fmt: skip
_NATO_DIGITS: Final = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "tree": "3", "four": "4", "fower": "4",
    "five": "5", "fife": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9",
    "niner": "9",
}  # fmt: skip
_SPELLED: Final = {**_NATO_LETTERS, **_NATO_DIGITS}
_NATO_WORDS: Final = frozenset(w.encode() for w in _SPELLED if "-" not in w) | {b"x"}
#: A word of a run, which is read lower-cased.
_SPELLED_TOKEN: Final = re.compile(r"x-ray|[a-z]+")


#: A run of NATO words must spell at least this many letters to be read.
_MIN_NATO_LETTERS: Final = 3


@lru_cache(maxsize=512)
def _nato_run(words: frozenset[str]) -> re.Pattern[str]:
    """Runs of at least :data:`_MIN_NATO_LETTERS` words: a shorter one spells too few
    letters to be read, and matching each (``x`` in ``\\x41``, thousands of times) cost a
    call of Python apiece."""
    word = _alternation(words | ({"x-ray"} if "x" in words else set()))
    more = _MIN_NATO_LETTERS - 1
    return re.compile(rf"(?:{word})(?:[\s,.;:/|\-]+(?:{word})){{{more},}}(?![a-z])")


@lru_cache(maxsize=512)
def _second_nato(words: frozenset[str]) -> re.Pattern[str]:
    """What every run of :func:`_nato_run` holds: the first separator after its first
    word (a letter before it: every word ends in one), the rest, its second word, a
    separator and its third word, which no letter follows (a separator or the run's end
    does). Started with the separator, which the search skips to in C, where the run's
    pattern is tried at every letter that starts a word (``x`` is one)."""
    word = _alternation(words | ({"x-ray"} if "x" in words else set()))
    sep = r"[\s,.;:/|\-]"
    return re.compile(rf"{sep}(?<=[a-z]{sep}){sep}*(?:{word}){sep}+(?:{word})(?![a-z])")


#: Where a run of letters meets a run of digits, either way round.
_LETTERS_MEET_DIGITS: Final = re.compile(r"(?<=[a-z])(?=[0-9])|(?<=[0-9])(?=[a-z])")


def _spelled(run: re.Match[str]) -> str:
    if _glued(run):
        return run.group()
    # Each word's letter or digit, looked up and joined in C: a run can be thousands of
    # words long, and a step of Python per word was most of its cost.
    words = _SPELLED_TOKEN.findall(run.group().lower())
    symbols = "".join(map(_SPELLED.get, words, itertools.repeat("")))
    letters = len(symbols.translate(_NO_DIGITS))
    if letters < _MIN_NATO_LETTERS:
        return run.group()
    # Symbols are letters and digits only: without a digit, no letter meets one (a long
    # run of letters was a look-behind tried at each of them).
    return symbols if letters == len(symbols) else _LETTERS_MEET_DIGITS.sub(" ", symbols)


_NO_DIGITS: Final = dict.fromkeys(map(ord, "0123456789"))


def nato(text: str) -> str | None:
    """Runs of NATO/ICAO spelling-alphabet words (and its digit words) as letters and digits;
    a letter run and a digit run stay apart, as the parts of a code do."""
    present = _present(text, _NATO_WORDS)
    lower = text.lower()
    # ``x`` is looked for as the start of ``x-ray``; alone it spells nothing (it reads as
    # no symbol), so without ``x-ray`` in the text it counts no letter.
    spelling = [w for w in present if w in _NATO_LETTERS or (w == "x" and "x-ray" in lower)]
    # The letters spelled are at least as many as the words that spell them: counted
    # only when those are too few.
    letters = len(spelling)
    if letters < _MIN_NATO_LETTERS:
        letters = count_in(text, frozenset(word.encode() for word in spelling))
        if letters < _MIN_NATO_LETTERS:
            return None
    if not _second_nato(present).search(lower):
        return None
    written = _nato_run(present).sub(_spelled, lower)
    return written if written != lower else None


_MORSE: Final = {
    ".-": "a", "-...": "b", "-.-.": "c", "-..": "d", ".": "e", "..-.": "f", "--.": "g",
    "....": "h", "..": "i", ".---": "j", "-.-": "k", ".-..": "l", "--": "m", "-.": "n",
    "---": "o", ".--.": "p", "--.-": "q", ".-.": "r", "...": "s", "-": "t", "..-": "u",
    "...-": "v", ".--": "w", "-..-": "x", "-.--": "y", "--..": "z", "-----": "0",
    ".----": "1", "..---": "2", "...--": "3", "....-": "4", ".....": "5", "-....": "6",
    "--...": "7", "---..": "8", "----.": "9",
}  # fmt: skip
#: Each look-alike of a dot or a dash, and the mark it stands for.
_DOTS: Final = tuple(zip("·•∙⋅*_−–—", "....-----", strict=True))
#: Three or more Morse letters separated by spaces (a word gap is ``/``, ``|`` or 3 spaces).
#: Written ``(?:[.-]{1,6}GAP){2,}[.-]{1,6}`` with its first mark taken out of the repetition
#: (``[.-][.-]{0,5}`` tries the same lengths in the same order as ``[.-]{1,6}``, so it
#: matches the same runs): a pattern starting with a set of characters is searched for in
#: C, one starting with a repetition was tried at every character of a reply.
_MORSE_RUN: Final = re.compile(
    r"[.\-][.\-]{0,5}(?: +| *[/|] *)(?:[.\-]{1,6}(?: +| *[/|] *))+[.\-]{1,6}"
)
_MORSE_WORD_GAP: Final = re.compile(r" *[/|] *| {3,}")


def _morse_run(run: re.Match[str]) -> str:
    words = _MORSE_WORD_GAP.split(run.group())
    return " ".join("".join(_MORSE.get(code, " ") for code in word.split()) for word in words)


def morse(text: str) -> str | None:
    """Runs of Morse code (dots and dashes, or their look-alikes) as letters and digits."""
    # One replacement per look-alike the text holds: a translation looks up every
    # character, which outside ASCII costs ten times more.
    plain = text
    for look_alike, mark in _DOTS:
        if look_alike in plain:
            plain = plain.replace(look_alike, mark)
    if ".-" not in plain and "-." not in plain and "..." not in plain and "---" not in plain:
        return None
    if len(plain) > _LONG and not _two_gaps(plain):
        return None
    written, count = _MORSE_RUN.subn(_morse_run, plain)
    return written if count else None


#: Past this many characters, a text is searched for Morse only where it may be
#: (:func:`_two_gaps`).
_LONG: Final = 4096
#: Each byte's kind in Morse: 1 a mark, 2 what starts a gap, 0 neither.
_MORSE_KINDS: Final = bytes(
    1 if chr(b) in ".-" else 2 if chr(b) in " /|" else 0 for b in range(256)
)


def _two_gaps(plain: str) -> bool:
    """Whether a stretch of ``plain`` made of marks and gaps holds two marks each right
    before a gap, as every run of :data:`_MORSE_RUN` does (three letters, two gaps): the
    pattern is tried at every mark, thousands in random base 85 (3 ms at 256 KiB), where
    these are a few passes over bytes."""
    kinds = np.frombuffer(plain.encode("ascii", "replace").translate(_MORSE_KINDS), np.uint8)
    before_gap = np.flatnonzero((kinds[:-1] == 1) & (kinds[1:] == 2))
    if len(before_gap) < 2:
        return False
    starts, _ = true_runs(kinds != 0)
    stretch = np.searchsorted(starts, before_gap, "right")
    return bool((stretch[1:] == stretch[:-1]).any())


#: Every spelled-out view, by name, in the order the judge tries them.
VIEWS: Final[tuple[tuple[str, Callable[[str], str | None]], ...]] = (
    ("number-words", number_words),
    ("nato", nato),
    ("morse", morse),
)
