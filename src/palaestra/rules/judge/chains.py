"""The chains of views the judge reads a reply through, and the budget on reading them.

A chain is the reply itself, one view of it, or (depth 2) a view of a view: a decoding may
be read by any view, any other view may be decoded. Depth 2 stops, deterministically, once
its views have read :func:`depth2_budget` characters. All the judge's reading of a reply
counts against :func:`judge_budget` (:class:`Reading`), a count of characters, so a verdict
never depends on the machine's speed. Pure: no I/O, no clock reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from palaestra.rules.judge.views import VIEWS, ChainPlace, View

__all__ = [
    "BUDGET_CHARS",
    "BUDGET_PER_CHAR",
    "Chain",
    "Exhausted",
    "Reading",
    "chains",
    "depth2_budget",
    "judge_budget",
    "replay",
    "view_chains",
]

#: The judge's budget on one reply, in characters read (:func:`judge_budget`). Every
#: shape measured (``bench/_judge_shapes.py``) reads under 50 characters per character of
#: the reply: only a shape whose reading grows faster than the reply meets the budget.
BUDGET_CHARS: Final = 4 * 1024 * 1024
BUDGET_PER_CHAR: Final = 160


def depth2_budget(reply_chars: int) -> int:
    """How many characters the depth-2 views may read in all, for a reply this long."""
    return 65_536 + 8 * reply_chars


def judge_budget(reply_chars: int) -> int:
    """How much work the judge may do on a reply this long, in characters read: each
    view's reading of its text, each search of a view, each search while locating a
    finding (:data:`BUDGET_CHARS` plus :data:`BUDGET_PER_CHAR` per character)."""
    return BUDGET_CHARS + BUDGET_PER_CHAR * reply_chars


class Exhausted(Exception):
    """The reply's budget is spent."""


@dataclass(slots=True)
class Reading:
    """The characters the judge has read so far, against the reply's budget."""

    budget: int
    spent: int = 0

    def spend(self, chars: int) -> None:
        self.spent += chars
        if self.spent > self.budget:
            raise Exhausted


def _composes(first: View, second: View) -> bool:
    if second.role is ChainPlace.PREFIX or first.role is ChainPlace.LAST:
        return False
    if first.role is ChainPlace.DECODING:
        return True
    return second.role is ChainPlace.DECODING and second is not first


@dataclass(frozen=True, slots=True)
class Chain:
    views: tuple[View, ...]
    text: str

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.views) or ("folded",)

    @property
    def fold(self) -> Callable[[str], str] | None:
        folds = [v.fold_secret for v in self.views if v.fold_secret is not None]
        return folds[-1] if folds else None


def view_chains(reply: str) -> Iterator[tuple[tuple[str, ...], str]]:
    """Every chain of views the judge reads ``reply`` through, with the text it reads."""
    for chain in chains(reply, Reading(judge_budget(len(reply)))):
        yield chain.names, chain.text


def chains(reply: str, work: Reading) -> Iterator[Chain]:
    yield Chain((), reply)
    firsts: list[Chain] = []
    for view in VIEWS:
        work.spend(len(reply))
        text = view.read(reply)
        if text is not None and text != reply:
            firsts.append(Chain((view,), text))
            if view.role is not ChainPlace.PREFIX:
                yield firsts[-1]
    budget = depth2_budget(len(reply))
    for first in firsts:
        for view in VIEWS:
            if not _composes(first.views[0], view):
                continue
            budget -= len(first.text)
            if budget < 0:
                return
            work.spend(len(first.text))
            text = view.read(first.text)
            if text is not None and text != first.text:
                yield Chain((*first.views, view), text)


def replay(views: Sequence[View], text: str) -> str | None:
    for view in views:
        read = view.read(text)
        if read is None:
            return None
        text = read
    return text
