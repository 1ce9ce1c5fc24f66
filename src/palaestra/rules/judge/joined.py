"""The judge's views of text put back together: encoded groups rejoined across separators,
and string literals concatenated as the program that holds them would.

- ``regrouped`` (:mod:`palaestra.rules.judge.regrouped`): four or more groups of two to
  eight base-64 or hex characters, one mark between each (``UVVJ.TEwt.NDgy``), closed up;
  lower-case base 32 in groups of four closed up in capitals.
- ``literals``: adjacent string literals joined, as Python, C and JavaScript read them:
  with a prefix (``b"CITADEL-40" b"89-MOSAIC"``, ``r'..'``, ``f".."``), and across the
  concatenation operators of common languages (``+``, ``.``, ``..``, ``||``, ``&``).

Pure: no I/O.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import re
import string
from collections.abc import Callable, Iterable
from typing import Final

import numpy as np

from palaestra.rules.judge.regrouped import regrouped
from palaestra.rules.judge.runs import true_runs

__all__ = ["VIEWS", "literals"]

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
    """Adjacent string literals (with prefixes, or joined by an operator) as one literal:
    what ``_LITERALS.subn(_contents, text)`` gives, at a cost in proportion to the text.

    The pattern, tried at every quote, read each one to the next quote like it, or to the
    end of the line past escaped ones: 8 ms on random Ascii85, and seconds on a line of
    escaped quotes, each read to its end. Here a run is tried only where it may start
    (:func:`_run_starts`), and once for all the first literals that close at one quote."""
    if '"' not in text and "'" not in text and "`" not in text:
        return None
    found: list[int] = []
    if len(text) <= _LONG_TEXT:
        found = [close.start() for close in itertools.islice(_CLOSE.finditer(text), _FEW + 1)]
        if not found:
            return None
    # Not ``code_points``, whose cache is for whole replies: a view's text would push one out.
    if text.isascii():
        chars: np.ndarray = np.frombuffer(text.encode("ascii"), np.uint8)
    else:
        chars = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
    # A long text's closing quotes from arrays at once: the pattern read all of one with
    # few of them (5 ms on JSON records at 256 KiB, where none closes a literal another
    # follows), and all of another's first few hundred before the arrays read them all.
    closes = np.array(found, np.int64) if 0 < len(found) <= _FEW else _closes(chars)
    if not len(closes):
        return None
    starts, ends = _run_starts(chars, closes)
    if not len(starts):
        return None
    # The starts of each close's first literals, a group each (its first start first); in
    # lists, searched with bisect: a call of numpy per run cost more than the run.
    edges = np.flatnonzero(ends[1:] != ends[:-1]) + 1
    low, high = np.concatenate(([0], edges)), np.concatenate((edges, [len(ends)]))
    order = np.argsort(starts[low], kind="stable")
    closes_past = ends[low][order]
    first, close = starts[low][order].tolist(), closes_past.tolist()
    low, high, every = low[order].tolist(), high[order].tolist(), starts.tolist()
    pieces: list[str] = []
    at = taken = 0
    later: list[tuple[int, int]] = []  # (start, group): groups gone on past a run

    def go_on(group: int) -> None:
        """Its first start at or after ``at``, if its literals close after it."""
        if close[group] >= at:
            found = bisect.bisect_left(every, at, low[group], high[group])
            if found < high[group]:
                heapq.heappush(later, (every[found], group))

    while taken < len(first) or later:
        if later and (taken == len(first) or later[0][0] < first[taken]):
            start, group = heapq.heappop(later)
            if start < at:  # passed by a run since: on from it
                go_on(group)
                continue
        else:
            start, taken = first[taken], taken + 1
        # Runs whose first literals close at the same quote go on alike from it: one start
        # of a group is tried, and if it fails, so would the others.
        run = _LITERALS.match(text, start)
        if run is None:
            continue
        pieces += (text[at:start], _contents(run))
        at = run.end()
        passed = bisect.bisect_left(first, at, taken)
        ahead: Iterable[int] = range(taken, passed)
        if passed - taken > _FEW_GROUPS:  # a long run: those closing past it, at once
            ahead = (np.flatnonzero(closes_past[taken:passed] >= at) + taken).tolist()
        for group in ahead:
            go_on(group)
        taken = max(taken, passed)
    joined = "".join(pieces) + text[at:]
    return joined if pieces and joined != text else None


#: Past this many groups a run passes, those whose literals close after it are found at once.
_FEW_GROUPS: Final = 64
#: Past this many characters, a text's quotes that close a literal another follows are
#: found from arrays at once.
_LONG_TEXT: Final = 4096
#: Up to this many quotes that close a literal another follows, the pattern lists them;
#: past it, arrays find them (a match at a time, tens of thousands in a run of literals).
_FEW: Final = 256


def _closes(chars: np.ndarray) -> np.ndarray:
    """Where :data:`_CLOSE` matches in the text of code points ``chars``, from arrays: a
    quote, whitespace, maybe an operator (``+``, ``.``, ``..``, ``||``, ``&``) and
    whitespace, up to two prefix letters, a quote (the search listed a match at a time,
    tens of thousands in a run of literals)."""
    quotes = np.flatnonzero(_is(chars, _QUOTE))
    if not len(quotes):
        return quotes
    space = np.append(_is_space(chars), False)  # no whitespace past the end
    first_space, after_space = true_runs(space)
    size = len(chars)

    def past_spaces(places: np.ndarray) -> np.ndarray:
        """The first place at or after each that is not whitespace: the end of the run of
        whitespace each stands in, looked up for those in one."""
        inside = np.flatnonzero(space[places])
        found = places.copy()
        found[inside] = after_space[np.searchsorted(first_space, places[inside], "right") - 1]
        return found

    padded = np.append(chars, np.zeros(3, chars.dtype))
    first = past_spaces(quotes + 1)
    one, two = padded[first], padded[first + 1]
    dots, bars = (one == ord(".")) & (two == ord(".")), (one == ord("|")) & (two == ord("|"))
    operator = np.where(dots | bars, 2, _is(one, _OPERATOR).astype(np.int64))
    at = np.where(operator > 0, past_spaces(np.minimum(first + operator, size)), first)
    quote = [_is(padded[at + k], _QUOTE) for k in range(3)]
    prefix = [_is(padded[at + k], _PREFIX) for k in range(2)]
    found = quote[0] | prefix[0] & (quote[1] | prefix[1] & quote[2])
    closes: np.ndarray = quotes[found]
    return closes


def _table(among: str) -> np.ndarray:
    """For each byte, whether it is one of the ASCII characters ``among``."""
    table = np.zeros(256, bool)
    table[[ord(char) for char in among]] = True
    return table


_QUOTE, _OPERATOR, _PREFIX, _WORD = map(
    _table, ("\"'`", "+.&", _PREFIXES, string.ascii_letters + string.digits + "_")
)


def _is(chars: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Whether each code point is one of ``table``'s (:func:`_table`)."""
    if chars.dtype == np.uint8:
        return table[chars]  # type: ignore[no-any-return]
    found: np.ndarray = (chars < 256) & table[np.minimum(chars, 255)]
    return found


def _is_space(chars: np.ndarray) -> np.ndarray:
    """Whether each code point is whitespace as ``\\s`` reads it (``str.isspace``)."""
    if chars.dtype == np.uint8:
        return _ASCII_SPACE[chars]  # type: ignore[no-any-return]
    distinct = np.unique(chars)
    spaces = [code for code in distinct.tolist() if chr(code).isspace()]
    return np.isin(chars, spaces)


_ASCII_SPACE: Final = np.array([chr(code).isspace() for code in range(256)])


def _run_starts(chars: np.ndarray, closes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where a run of :data:`_LITERALS` may start, in order, and where its first literal
    would close, in a text (its code points ``chars``) whose quotes that close a literal
    another follows are ``closes``: at a quote (or up to two prefix letters before it)
    whose literal closes at one of them.

    A literal read from its opening quote closes at the first quote of its kind after it
    that no backslash escapes (one after an even run of backslashes; a backtick literal
    holds no backslash), on the same line: found for every quote at once, from arrays."""
    newlines = np.flatnonzero(chars == ord("\n"))
    backslash = chars == ord("\\")
    slashes = np.flatnonzero(backslash)
    # Each run of backslashes: where it starts, and where it ends (the place after it).
    first, last = true_runs(backslash) if len(slashes) else (slashes, slashes)
    is_close = np.zeros(len(chars), bool)
    is_close[closes] = True
    openings: list[np.ndarray] = []
    closings: list[np.ndarray] = []
    for quote in "\"'`":
        places = np.flatnonzero(chars == ord(quote))
        if not len(places):
            continue
        if quote == "`":
            unescaped, barriers = places, np.union1d(newlines, slashes)
        else:
            # The run of backslashes right before each quote, if one ends there.
            run = np.searchsorted(last, places)
            ends_here = run < len(last)
            ends_here[ends_here] = last[run[ends_here]] == places[ends_here]
            length = np.zeros(len(places), np.int64)
            length[ends_here] = places[ends_here] - first[run[ends_here]]
            unescaped, barriers = places[length % 2 == 0], newlines
        if len(unescaped) == len(places):  # no quote escaped: each closes at the next
            opening, closing = places[:-1], places[1:]
        else:
            after = np.searchsorted(unescaped, places, "right")
            has = after < len(unescaped)
            opening, closing = places[has], unescaped[after[has]]
        on_line = np.searchsorted(barriers, closing) == np.searchsorted(barriers, opening, "right")
        keep = on_line & is_close[closing]
        openings.append(opening[keep])
        closings.append(closing[keep])
    if not openings:
        return closes[:0], closes[:0]
    opening, closing = np.concatenate(openings), np.concatenate(closings)
    # Each opening as the first literal's pattern starts it: at the quote, or one or two
    # prefix letters before it; no letter, digit or underscore before that.
    padded = np.concatenate((np.zeros(3, chars.dtype), chars))  # chars[k] is padded[k + 3]
    word, prefix = _is(padded, _WORD), _is(padded, _PREFIX)
    starts = [opening, opening - 1, opening - 2]
    valid = [
        ~word[opening + 2],
        prefix[opening + 2] & ~word[opening + 1],
        prefix[opening + 2] & prefix[opening + 1] & ~word[opening],
    ]
    start = np.concatenate([begin[ok] for begin, ok in zip(starts, valid, strict=True)])
    close = np.concatenate([closing[ok] for ok in valid])
    order = np.lexsort((start, close))
    return start[order], close[order]


#: Every view of this module, by name, in the order the judge tries them.
VIEWS: Final[tuple[tuple[str, Callable[[str], str | None]], ...]] = (
    ("regrouped", regrouped),
    ("literals", literals),
)
