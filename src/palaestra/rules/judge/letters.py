"""The judge's views of letters written another way: Braille cells, English letter names,
and the look-alike letters Unicode's confusables data leaves out.

- ``braille``: Unicode Braille patterns (``U+2800``-``U+28FF``) read as Grade 1 (uncontracted)
  English Braille: the 26 letters, the number sign ``⠼`` that makes ``a``-``j`` the digits
  ``1``-``0`` up to the next space or non-digit cell, the hyphen ``⠤``; the capital and
  letter signs are dropped. Each pattern is also read as a byte (``U+2800 + b``), the way
  tools write binary in Braille, on a line of its own.
- ``letter-names``: three or more English letter names in a row (``pee double-u en ee
  dee``, ``see eye tee ay``) as the letters, with digit words as digits.
- :data:`LOOK_ALIKES`: Greek and Cyrillic letters that imitate a Latin letter in
  ordinary type but that Unicode TR39 maps to no ASCII letter (Greek ``κ``, ``η``, ``τ``;
  Cyrillic ``к``, ``т``, ``н``); the confusables view reads them with TR39's own.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Final

import numpy as np

from palaestra.rules.judge.runs import printable_runs, true_runs
from palaestra.rules.judge.spelled import count_in, words_in
from palaestra.rules.judge.translate import code_points

__all__ = ["LOOK_ALIKES", "VIEWS", "braille", "letter_names"]

#: Grade 1 English Braille: each letter's cell (dots as bits: dot n is bit n - 1).
_BRAILLE_LETTERS: Final = dict(
    zip(
        "\u2801\u2803\u2809\u2819\u2811\u280b\u281b\u2813\u280a\u281a\u2805\u2807\u280d"
        "\u281d\u2815\u280f\u281f\u2817\u280e\u281e\u2825\u2827\u283a\u282d\u283d\u2835",
        "abcdefghijklmnopqrstuvwxyz",
        strict=True,
    )
)
_NUMBER_SIGN: Final = "\u283c"
_HYPHEN: Final = "\u2824"


#: Each cell as a letter, the number sign as ``#``, the letter sign as ``;`` (it ends a
#: number), the capital sign as nothing, the hyphen as ``-``; any other cell a space.
_CELLS: Final = {
    **dict.fromkeys(range(0x2800, 0x2900), " "),
    **{ord(cell): letter for cell, letter in _BRAILLE_LETTERS.items()},
    ord(_NUMBER_SIGN): " #",
    ord("\u2830"): ";",
    ord("\u2820"): "",
    ord(_HYPHEN): "-",
}
_NUMBER: Final = re.compile(r"#([a-j]+)")
_AS_DIGITS: Final = str.maketrans("abcdefghij", "1234567890")


_CELL: Final = re.compile("[\u2800-\u28ff]")
#: What a cell reads as, by its offset from ``U+2800``: the letter, or a mark that
#: :data:`_CELLS` turns into what it reads (the number sign two characters, the capital
#: sign none); looked up for every character of a reply at once.
_CELL_CODES: Final = np.frombuffer(
    "".join(
        {" #": "#", "": "\x01"}.get(_CELLS[code], _CELLS[code]) for code in range(0x2800, 0x2900)
    ).encode("ascii"),
    np.uint8,
)


def braille(text: str) -> str | None:
    """The runs of Braille cells as Grade 1 letters and digits (``⠟⠥⠊⠇⠇ ⠼⠙⠓⠃⠁`` reads
    ``quill 4821``), and, on a line after, the cells read as bytes.

    A run is a cell and the cells, spaces and hyphens after it; read over the whole reply
    at once, as arrays of code points (a call of Python per run was most of the time a
    reply of thousands of runs took)."""
    if text.isascii() or not _CELL.search(text):
        return None
    codes = code_points(text)
    offsets = codes - np.uint32(0x2800)
    cell = offsets < 0x100
    # A stretch of cells, spaces and hyphens is a run from its first cell on.
    within = cell | (codes == 0x20) | (codes == 0x2D)
    starts, ends = true_runs(within)
    cells_before = np.concatenate(([0], np.cumsum(cell)))
    has_cell = cells_before[ends] > cells_before[starts]
    starts, ends = starts[has_cell], ends[has_cell]
    # Each run's first cell: the first place after its start where the count of cells grows.
    firsts = np.searchsorted(cells_before, cells_before[starts] + 1) - 1
    in_run = np.zeros(len(codes) + 1, np.int8)
    in_run[firsts], in_run[ends] = 1, -1
    kept = np.cumsum(in_run[:-1]) > 0
    # The runs' characters, read (what is no cell, a space or a hyphen, stays), one space
    # between each run and the next.
    read = np.where(cell, _CELL_CODES[np.minimum(offsets, 0xFF)], codes).astype(np.uint8)[kept]
    lengths = ends - firsts
    read = np.insert(read, np.cumsum(lengths)[:-1], ord(" "))
    runs = read.tobytes().decode("ascii").replace("#", " #").replace("\x01", "")
    letters = _NUMBER.sub(lambda n: n.group(1).translate(_AS_DIGITS), runs).replace(";", "")
    as_bytes = printable_runs(offsets[cell].astype(np.uint8).tobytes())
    return letters if as_bytes is None else f"{letters}\n{as_bytes}"


_NAMES: Final = {
    "ay": "a", "aye": "a", "bee": "b", "cee": "c", "see": "c", "sea": "c", "dee": "d",
    "ee": "e", "ef": "f", "eff": "f", "gee": "g", "aitch": "h", "haitch": "h", "eye": "i",
    "jay": "j", "kay": "k", "el": "l", "ell": "l", "em": "m", "en": "n", "oh": "o",
    "pee": "p", "cue": "q", "queue": "q", "ar": "r", "ess": "s", "tee": "t", "you": "u",
    "yoo": "u", "vee": "v", "doubleu": "w", "doubleyou": "w", "dubya": "w", "ex": "x",
    "why": "y", "wye": "y", "zee": "z", "zed": "z",
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9",
}  # fmt: skip
_LETTER_NAMES: Final = frozenset(k for k, v in _NAMES.items() if v.isalpha())
_LETTER_BYTES: Final = frozenset(w.encode() for w in _LETTER_NAMES) | {b"double"}
_NAME_BYTES: Final = frozenset(w.encode() for w in _NAMES)
#: The names counted as letters ("double" alone names none).
_COUNTED: Final = _LETTER_BYTES & _NAME_BYTES
#: A run must name at least this many letters to be read: fewer are ordinary words.
_MIN_LETTERS: Final = 3


@lru_cache(maxsize=256)
def _names_run(words: frozenset[str]) -> re.Pattern[str]:
    """Runs of the letter names a text holds (an alternation of all of them would be tried
    at every word of every reply)."""
    names = ["double[\\s\\-]?(?:u|you)", *sorted(words, key=lambda w: (-len(w), w))]
    word = "|".join(names)
    # The first name's start is a word's (``\b``), looked behind for after its first
    # letter: a pattern starting with letters is searched for in C, one starting with
    # ``\b`` was tried at every character of a reply.
    first = "|".join(f"{name[0]}(?<!\\w.){name[1:]}" for name in names)
    return re.compile(rf"(?:{first})(?:[\s,.;:/|\-]+(?:{word}))*(?![a-z])")


@lru_cache(maxsize=256)
def _second_name(words: frozenset[str]) -> re.Pattern[str]:
    """What every run of :func:`_names_run` of three or more names holds: the first
    separator after its first name (a letter before it: every name ends in one), the
    rest, its second name, a separator and its third name, which no letter follows (a
    separator or the run's end does). Started with the separator, which the search skips
    to in C, where the run's pattern is tried at every letter that starts a name."""
    word = "|".join(["double[\\s\\-]?(?:u|you)", *sorted(words, key=lambda w: (-len(w), w))])
    sep = r"[\s,.;:/|\-]"
    return re.compile(rf"{sep}(?<=[a-z]{sep}){sep}*(?:{word}){sep}+(?:{word})(?![a-z])")


def _spelled(run: re.Match[str]) -> str:
    words = re.findall(r"double[\s\-]?(?:u|you)|[a-z]+", run.group())
    symbols = [_NAMES.get(w.replace(" ", "").replace("-", ""), "") for w in words]
    if sum(s.isalpha() for s in symbols) < _MIN_LETTERS:
        return run.group()
    out = ""
    for symbol in symbols:
        if out and out[-1].isalpha() != symbol.isalpha():
            out += " "
        out += symbol
    return out


def letter_names(text: str) -> str | None:
    """Runs of three or more English letter names (and digit words) as letters and digits:
    ``pee double-u en ee dee`` reads ``pwned``; a letter run and a digit run stay apart."""
    present = words_in(text, _NAME_BYTES)
    named = _COUNTED.intersection(present)
    # The letters named are at least as many as the names: counted only when too few.
    if len(named) < _MIN_LETTERS and count_in(text, named) < _MIN_LETTERS:
        return None
    names = frozenset(w.decode() for w in present)
    lower = text.lower()
    # A run reads as letters only with three names or more (each name reads one symbol,
    # the letters counted among them): without that, every run is written back as it is.
    if not _second_name(names).search(lower):
        return None
    written = _names_run(names).sub(_spelled, lower)
    # ASCII, as the Braille reading (other characters are another view's).
    return written.encode("ascii", "replace").decode() if written != lower else None


#: Look-alikes that TR39 leaves out (it maps these to no ASCII letter), read as the Latin
#: letter they imitate in ordinary type; capitals are listed with their small letters.
LOOK_ALIKES: Final = {
    # Greek
    "α": "a", "β": "b", "γ": "y", "ε": "e", "η": "n", "ι": "i", "κ": "k", "μ": "u",
    "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u", "χ": "x",
    "ω": "w", "Α": "a", "Β": "b", "Ε": "e", "Ζ": "z", "Η": "h", "Ι": "i", "Κ": "k",
    "Μ": "m", "Ν": "n", "Ο": "o", "Ρ": "p", "Τ": "t", "Υ": "y", "Χ": "x", "Ϲ": "c",
    "Ϻ": "m", "ϲ": "c", "ϳ": "j",
    # Cyrillic
    "в": "b", "г": "r", "к": "k", "м": "m", "н": "h", "п": "n", "т": "t", "ш": "w",
    "И": "n", "Я": "r", "Ш": "w", "П": "n", "Л": "n", "ѕ": "s", "ј": "j", "ԁ": "d",
}  # fmt: skip


#: Every view of letters written another way, by name, in the order the judge tries them.
VIEWS: Final[tuple[tuple[str, Callable[[str], str | None]], ...]] = (
    ("braille", braille),
    ("letter-names", letter_names),
)
