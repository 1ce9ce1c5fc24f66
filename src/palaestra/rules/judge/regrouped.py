"""The judge's ``regrouped`` view: encoded groups rejoined across the marks between them.

Four or more groups of two to eight base-64 or hex characters, one mark between each
(``UVVJ.TEwt.NDgy``, ``51.55.49.4c``, ``51|55|49|4c``), closed up, and lower-case base 32
in groups of four (``kzhv evcf lawt onbw hawu``) closed up in capitals; only before a
decoding (the decodings already rejoin tokens across whitespace, dashes and commas, but
see no base 32 in four-letter words). Pure: no I/O.
"""

from __future__ import annotations

import re
import string
from typing import Final

import numpy as np

from palaestra.rules.judge.classes import char_classes
from palaestra.rules.judge.runs import true_runs

__all__ = ["regrouped"]

#: Past this many characters, a text of ASCII has its marks that may start a run found
#: from arrays.
_LONG_TEXT: Final = 4096

#: The marks that may stand between groups (whitespace, dashes and commas are the decodings').
_GROUP_MARKS: Final = ".|:;·•~_"
_GROUPS: Final = re.compile(
    f"[A-Za-z0-9+/=]{{2,8}}(?:[{re.escape(_GROUP_MARKS)}][A-Za-z0-9+/=]{{2,8}}){{3,}}"
)
_GROUP_MARK: Final = re.compile(f"[{re.escape(_GROUP_MARKS)}]")
#: A mark that three groups follow, a mark between each: every run of :data:`_GROUPS` has
#: one, its first mark. The pattern starts with the mark, which the search skips to in C.
_RUN_MARK: Final = re.compile(
    f"[{re.escape(_GROUP_MARKS)}](?=[A-Za-z0-9+/=]{{2,8}}"
    f"[{re.escape(_GROUP_MARKS)}][A-Za-z0-9+/=]{{2,8}}"
    f"[{re.escape(_GROUP_MARKS)}][A-Za-z0-9+/=]{{2}})"
)
#: A mark between two letters or digits; the pattern starts with the mark, which most
#: characters are not, so that the search skips through a reply.
_HINT: Final = re.compile(
    f"[{re.escape(_GROUP_MARKS)}](?<=[A-Za-z0-9][{re.escape(_GROUP_MARKS)}])[A-Za-z0-9]"
)


def _run_marks(text: str) -> list[int]:
    """Where :data:`_RUN_MARK` matches: in a long text of ASCII, from arrays. Groups and
    marks have no character in common, so a group right after a mark is the whole run
    of group characters there, which must be two to eight long and end at a mark (the
    pattern, tried at every mark, cost 2 ms on random Ascii85's thousands)."""
    if len(text) <= _LONG_TEXT or not text.isascii():
        return [found.start() for found in _RUN_MARK.finditer(text)]
    kinds = np.frombuffer(text.encode("ascii").translate(_GROUP_KINDS), np.uint8)
    starts, ends = true_runs(kinds == 1)
    # The group that starts at each place, by its length (0: none; nine for any longer,
    # which is too long), and past the end no group and no mark.
    group = np.zeros(len(kinds) + 32, np.int64)
    group[starts] = np.minimum(ends - starts, 9)
    is_mark = np.append(kinds == 2, np.zeros(32, bool))
    marks = np.flatnonzero(kinds == 2)
    first = group[marks + 1]
    second_mark = marks + 1 + first
    ok = (first >= 2) & (first <= 8) & is_mark[second_mark]
    second = group[second_mark + 1]
    third_mark = second_mark + 1 + second
    ok &= (second >= 2) & (second <= 8) & is_mark[third_mark]
    ok &= group[third_mark + 1] >= 2
    found: list[int] = marks[ok].tolist()
    return found


#: Each ASCII character's kind: 1 a group's (:data:`_GROUPS`), 2 a mark between groups.
_GROUP_KINDS: Final = bytes(
    1
    if chr(b) in string.ascii_letters + string.digits + "+/="
    else 2
    if chr(b) in _GROUP_MARKS
    else 0
    for b in range(256)
)


#: Lower-case base 32 in groups of four, one space apart (``kfkv etkm``): five groups or
#: more (twelve bytes: a secret is at least ten characters), the last one maybe shorter.
_BASE32_GROUPS: Final = re.compile(
    r"[a-z2-7]{4}(?: [a-z2-7]{4}){4,}(?: [a-z2-7]{1,3})?(?![a-z2-7])"
)


_FIVE_GROUPS: Final = b"llllsllllsllllsllllsllll"
_NOT_GROUPED: Final = re.compile("[^A-Za-z0-9+/=]")


def _first_run(text: str, start: int, stop: int) -> re.Match[str] | None:
    """The first match of :data:`_GROUPS` starting from ``start`` to before ``stop``. A
    run's first group ends where its characters do, at a mark, so every start before the
    same mark matches or fails alike: one match tried per mark, not one per start."""
    while start < stop:
        found = _NOT_GROUPED.search(text, start)
        end = len(text) if found is None else found.start()
        if end - start > 8:
            start = end - 8  # a first group is at most eight characters
            continue
        if end - start >= 2 and end < len(text) and text[end] in _GROUP_MARKS:
            run = _GROUPS.match(text, start)
            if run is not None:
                return run
        start = end + 1
    return None


def regrouped(text: str) -> str | None:
    """Groups of encoded characters with a mark between each, closed up; and lower-case
    base 32 in groups of four, closed up in capitals (as prose, four-letter words in a row
    have no sign of base 32 to the decodings). Each run on a line of its own."""
    runs: list[str] = []
    last = 0
    # A run found from a hint has its first mark at most six characters before the hint:
    # only the hints up to six characters after a mark that may start a run are tried, in
    # order (a reply with no such mark, most of them, has none).
    tried = -1
    for mark in _run_marks(text):
        for hint in _HINT.finditer(text, max(mark, tried + 1), mark + 8):
            tried = hint.start()
            # A run's first group is at most eight characters before its first mark: try
            # the run from there, not the pattern at every character of the reply.
            if hint.start() < last:
                continue
            run = _first_run(text, max(last, hint.start() - 8), hint.start() - 1)
            if run is not None:
                runs.append(_GROUP_MARK.sub("", run.group()))
                last = run.end()
    # Five groups of four letters, found in the character classes (one a character); with a
    # digit, base 32 already shows as such to the decodings.
    classes = char_classes(text)
    at = classes.find(_FIVE_GROUPS)
    while at != -1:
        found = _BASE32_GROUPS.match(text, at)
        if found is not None and not (at and text[at - 1].isalnum()):
            runs.append(found.group().replace(" ", "").upper())
            at = found.end()
        else:
            at += 1
        at = classes.find(_FIVE_GROUPS, at)
    return "\n".join(runs) if runs else None
