"""The judge's views of text put back together: encoded groups rejoined across separators,
and string literals concatenated as the program that holds them would.

- ``regrouped``: four or more groups of two to eight base-64 or hex characters, one mark
  between each (``UVVJ.TEwt.NDgy``, ``51.55.49.4c``, ``51|55|49|4c``), closed up, and
  lower-case base 32 in groups of four (``kzhv evcf lawt onbw hawu``) closed up in
  capitals; only before a decoding (the decodings already rejoin tokens across
  whitespace, dashes and commas, but see no base 32 in four-letter words).
- ``literals``: adjacent string literals joined, as Python, C and JavaScript read them:
  with a prefix (``b"CITADEL-40" b"89-MOSAIC"``, ``r'..'``, ``f".."``), and across the
  concatenation operators of common languages (``+``, ``.``, ``..``, ``||``, ``&``).

Pure: no I/O.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Final

from palaestra.rules.judge.classes import char_classes

__all__ = ["VIEWS", "literals", "regrouped"]

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
    for mark in [found.start() for found in _RUN_MARK.finditer(text)]:
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


#: Each quote, and what follows it to the end of a literal it opens: ``{group}`` opens the
#: group of the contents.
_AFTER_QUOTE: Final = {
    '"': r'{group}[^"\\\n]*(?:\\.[^"\\\n]*)*)\"',
    "'": r"{group}[^'\\\n]*(?:\\.[^'\\\n]*)*)'",
    "`": r"{group}[^`\\\n]*)`",
}
_PREFIXES: Final = "bBrRuUfF"
_NOT_AFTER: Final = "[A-Za-z0-9_]"


def _quoted(group: str) -> str:
    return "|".join(quote + after.format(group=group) for quote, after in _AFTER_QUOTE.items())


def _literal(group: str) -> str:
    """A string literal; ``group`` opens the group of its contents: ``(`` to capture them,
    ``(?:`` not to (a group inside a repetition makes a search keep its places at every
    step, five times slower over a run of literals)."""
    return rf"(?<!{_NOT_AFTER})[{_PREFIXES}]{{0,2}}(?:{_quoted(group)})"


def _first_literal() -> str:
    """:func:`_literal` as a run's first, one branch per character it may start with:
    the branch's character, the look-behind after it, then the rest (after a prefix, a
    second one or none: the lengths ``[bBrRuUfF]{0,2}`` tries, in its order, since none
    cannot start at a letter). A pattern starting with a choice of characters is searched
    for in C; one starting with a look-behind was tried at every character of a reply."""
    after = f"(?<!{_NOT_AFTER}.)"
    prefixed = (f"{prefix}{after}[{_PREFIXES}]?(?:{_quoted('(?:')})" for prefix in _PREFIXES)
    quoted = (f"{quote}{after}{rest.format(group='(?:')}" for quote, rest in _AFTER_QUOTE.items())
    return f"(?:{'|'.join([*prefixed, *quoted])})"


_LITERAL: Final = _literal("(?:")
_JOIN: Final = r"\s*(?:(?:\+|\.\.?|\|\||&)\s*)?"
_LITERALS: Final = re.compile(f"{_first_literal()}(?:{_JOIN}{_LITERAL})+")
_ONE_LITERAL: Final = re.compile(_literal("("))
#: A quote that closes a literal another one follows (a quote, a join, a prefix, a quote),
#: found in one fast search: every run of literals holds one.
_CLOSE: Final = re.compile(f"[\"'`](?={_JOIN}[bBrRuUfF]{{0,2}}[\"'`])")


def _contents(run: re.Match[str]) -> str:
    # Each literal's three groups, two of them empty, joined in C: a call of Python per
    # literal was most of the time a run of thousands took.
    return '"' + "".join(itertools.chain.from_iterable(_ONE_LITERAL.findall(run.group()))) + '"'


def literals(text: str) -> str | None:
    """Adjacent string literals (with prefixes, or joined by an operator) as one literal."""
    if '"' not in text and "'" not in text and "`" not in text:
        return None
    closes = [found.start() for found in itertools.islice(_CLOSE.finditer(text), _FEW_CLOSES + 1)]
    if not closes:
        return None
    if len(closes) > _FEW_CLOSES:  # runs of literals: the pattern reads them in C
        joined, count = _LITERALS.subn(_contents, text)
        return joined if count and joined != text else None
    pieces: list[str] = []
    at = 0
    for start in _run_starts(text, closes):
        if start < at:
            continue
        run = _LITERALS.match(text, start)
        if run is not None:
            pieces += (text[at:start], _contents(run))
            at = run.end()
    joined = "".join(pieces) + text[at:]
    return joined if pieces and joined != text else None


#: Up to this many such quotes, runs are tried only where they may start (:func:`_run_starts`).
_FEW_CLOSES: Final = 1024


def _run_starts(text: str, closes: list[int]) -> list[int]:
    """Every place a run of :data:`_LITERALS` may start, in order, of a text whose quotes
    that close a literal another follows are ``closes``: ``_LITERALS.subn`` finds its runs
    there, where it tried every quote and read each to the next quote like it (8 ms on
    random Ascii85, a quote in thirty, to find a few hundred runs).

    A run's first literal ends at one of ``closes``. It starts on that line, at the quote
    of that kind before it or, where that one may be escaped (a backslash before it), at
    one further back; after up to two prefix letters."""
    starts: set[int] = set()
    for close in closes:
        quote, line = text[close], text.rfind("\n", 0, close) + 1
        opening = text.rfind(quote, line, close)
        while opening >= line:
            starts.update(range(max(opening - 2, 0), opening + 1))
            if opening == 0 or text[opening - 1] != "\\":
                break
            opening = text.rfind(quote, line, opening)
    return sorted(starts)


#: Every view of this module, by name, in the order the judge tries them.
VIEWS: Final[tuple[tuple[str, Callable[[str], str | None]], ...]] = (
    ("regrouped", regrouped),
    ("literals", literals),
)
