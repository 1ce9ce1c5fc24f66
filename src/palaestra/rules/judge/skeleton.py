"""Look-alike letters read as the ASCII letters and digits they imitate: the TR39 skeleton
the judge's ``confusables`` view reads a reply through (``QUІLL``, with a Cyrillic І, reads
``quill``). The data is Unicode's confusables list as ``confusable-homoglyphs`` packages
it, with the look-alikes it lacks (``judge_letters.LOOK_ALIKES``). Pure: no I/O beyond the
package's data file, read once.
"""

from __future__ import annotations

import json
import unicodedata
from functools import cache
from importlib import resources
from typing import Final

from palaestra.rules.judge import letters as judge_letters
from palaestra.rules.judge.translate import Translation

__all__ = ["skeleton"]


@cache
def _skeleton_table() -> dict[int, str]:
    """Each confusable character to its prototype, from Unicode TR39's confusables data
    (as packaged by ``confusable-homoglyphs``), for the prototypes in ASCII letters and
    digits; lower-cased, as the judge compares folded text."""
    data = json.loads(
        resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text()
    )
    table: dict[int, str] = {}
    for prototype, homoglyphs in data.items():
        for glyph in homoglyphs:
            target, char = glyph["c"].strip("\u200e"), prototype
            if len(char) == 1 and target.isascii() and target.isalnum():
                table.setdefault(ord(char), target.lower())
            if len(target) == 1 and prototype.isascii() and prototype.isalnum():
                table.setdefault(ord(target), prototype.lower())
    # Look-alikes TR39 maps to no ASCII letter (Greek κ, Cyrillic т) are read too.
    for char, target in judge_letters.LOOK_ALIKES.items():
        table.setdefault(ord(char), target)
    # Case is folded first, and ASCII stays itself: the judge's other views read digits.
    for char in range(128):
        table.pop(char, None)
    return table


@cache
def _before_nfkd() -> dict[int, str]:
    """The look-alikes read before NFKD: the capitals of :func:`_capital_targets`, and the
    characters TR39 maps that NFKD would change."""
    changed = {
        code: target
        for code, target in _skeleton_table().items()
        if unicodedata.normalize("NFKD", chr(code)) != chr(code)
    }
    return changed | _capital_targets()


@cache
def _capital_targets() -> dict[int, str]:
    """Capitals that TR39 maps to a Latin capital: Greek Ν is ``N`` and Υ is ``Y``, though
    their small letters ν and υ imitate ``v`` and ``u`` (``I``, which TR39 writes ``l``,
    stays ``i``)."""
    data = json.loads(
        resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text()
    )
    table: dict[int, str] = {}
    for prototype, homoglyphs in data.items():
        for glyph in homoglyphs:
            target = glyph["c"].strip("\u200e")
            capital = len(prototype) == 1 and prototype.isupper() and not prototype.isascii()
            latin = len(target) == 1 and target.isascii() and target.isupper() and target != "I"
            if capital and latin:
                table.setdefault(ord(prototype), target.lower())
    return table


def skeleton(text: str) -> str:
    """``text`` lower-cased with each look-alike character (TR39) replaced by the ASCII
    letter or digit it imitates, and accents dropped: ``QUІLL`` (Cyrillic І) reads
    ``quill``.

    Each character's reading depends on that character alone (NFKD reorders only the
    combining marks, which are dropped), except a capital sigma's, which ``lower()``
    reads by the letters around it: a text without one is read through each character's
    reading, found on first sight, as arrays of code points (``judge_translate``; four
    passes over the text, one of them NFKD, cost five times more)."""
    read = _SKELETONS(text)
    return _skeleton_of(text) if _SIGMA in read else read


#: What a character NFKD makes a capital sigma reads as in the table: the text is then read
#: as a whole (a text holding this character itself is too, which costs time, not truth).
_SIGMA: Final = "\uffff"


def _character_skeleton(char: str) -> str:
    """A character's skeleton, or :data:`_SIGMA`."""
    if char.isascii():
        return char.lower()
    sigma = "\u03a3" in unicodedata.normalize("NFKD", char.translate(_before_nfkd()))
    return _SIGMA if sigma or char == _SIGMA else _skeleton_of(char)


#: Each character's skeleton, found on first sight, for whole texts at once.
_SKELETONS: Final = Translation(_character_skeleton)


def _skeleton_of(text: str) -> str:
    # TR39's own reading first where NFKD would change a character: NFKD makes the lunate
    # sigmas Ϲ ϲ (which imitate C) the sigmas Σ ς.
    decomposed = unicodedata.normalize("NFKD", text.translate(_before_nfkd()))
    bare = decomposed.translate(_combining_marks())
    return bare.translate(_capitals_table()).lower().translate(_skeleton_table())


@cache
def _capitals_table() -> dict[int, str]:
    """The capitals whose small letter imitates nothing (Greek Β imitates B, β nothing):
    read before case is folded; other capitals are read as their small letter is
    (Cyrillic І as і, which imitates i)."""
    table = _skeleton_table()
    return {
        code: target
        for code, target in table.items()
        if chr(code).lower() != chr(code) and ord(chr(code).lower()[0]) not in table
    }


@cache
def _combining_marks() -> dict[int, None]:
    """Every combining mark (accents; none lie above the first two planes), to be deleted
    in one ``str.translate``."""
    return {code: None for code in range(0x20000) if unicodedata.combining(chr(code))}
