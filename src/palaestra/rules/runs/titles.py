"""Near-duplicate candidate titles, as the shortlist merges them.

Two titles name the same idea when their words (lowercased, stopwords left out)
overlap enough, or when their spellings are close enough by difflib's ratio.
Titles come back run after run (the same agents, like goals): each one's reading,
and each pair's comparison past the words, is remembered (bounded).
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from functools import lru_cache
from typing import Final, NamedTuple

__all__ = ["DUPLICATE_JACCARD", "DUPLICATE_RATIO", "Title", "near", "near_duplicate", "title"]

#: Titles are near-duplicates when their word sets overlap this much (Jaccard) ...
DUPLICATE_JACCARD: Final = 0.6
#: ... or their normalized spellings are this similar (difflib ratio).
DUPLICATE_RATIO: Final = 0.85
_STOPWORDS: Final = frozenset(
    [
        "a",
        "an",
        "and",
        "the",
        "for",
        "of",
        "to",
        "in",
        "on",
        "with",
        "by",
        "from",
        "your",
        "our",
        "their",
        "as",
        "at",
        "is",
        "are",
        "via",
    ]
)
_WORD = re.compile(r"[a-z0-9]+")


def _normalized(raw: str) -> list[str]:
    return [w for w in _WORD.findall(raw.lower()) if w not in _STOPWORDS]


def near_duplicate(first: str, second: str) -> bool:
    """Whether two candidate titles name the same idea."""
    return near(title(first), title(second))


class Title(NamedTuple):
    """A title as :func:`near_duplicate` compares it: its words, and their spelling."""

    raw: str
    words: frozenset[str]
    joined: str


@lru_cache(maxsize=4096)
def title(raw: str) -> Title:
    """``raw`` as compared (remembered)."""
    words = _normalized(raw)
    return Title(raw, frozenset(words), " ".join(words))


def _ratio(matches: int, length: int) -> float:
    """difflib's ratio of ``matches`` in two sequences of ``length`` elements together."""
    return 2.0 * matches / length if length else 1.0


def near(a: Title, b: Title) -> bool:
    """Whether two titles name the same idea."""
    if not a.words or not b.words:
        return a.raw.strip().lower() == b.raw.strip().lower()
    if len(a.words & b.words) / len(a.words | b.words) >= DUPLICATE_JACCARD:
        return True
    # difflib's real_quick_ratio and quick_ratio, upper bounds of its ratio, from the titles'
    # lengths and letters: most pairs stop there, before a matcher is built.
    length = len(a.joined) + len(b.joined)
    if _ratio(min(len(a.joined), len(b.joined)), length) < DUPLICATE_RATIO:
        return False
    return _similar(a.joined, b.joined)


@lru_cache(maxsize=4096)
def _similar(a: str, b: str) -> bool:
    """difflib's ratio of ``a`` and ``b`` is at least :data:`DUPLICATE_RATIO` (remembered)."""
    if _ratio((Counter(a) & Counter(b)).total(), len(a) + len(b)) < DUPLICATE_RATIO:
        return False
    return difflib.SequenceMatcher(None, a, b).ratio() >= DUPLICATE_RATIO
