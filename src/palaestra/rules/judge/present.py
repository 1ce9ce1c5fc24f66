"""Which of many byte strings occur in a long text: one Aho-Corasick pass, a long text in
two steps. The scan of a view looks for every secret's readings and parts so; the spelled
views look for their vocabularies' words so, each between spaces. Pure: no I/O.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from ahocorasick_rs import BytesAhoCorasick, Implementation

__all__ = ["FIRST_CHARS", "all_present", "automaton", "present"]

#: A text longer than twice this is searched in two steps (:func:`present`).
FIRST_CHARS: Final = 4 * 1024


def present(searcher: BytesAhoCorasick, patterns: tuple[bytes, ...], text: bytes) -> set[bytes]:
    """Which of ``patterns`` (``searcher`` is their automaton) occur in ``text``,
    overlapping ones included.

    A long text is searched for all of them in its first :data:`FIRST_CHARS` characters,
    then, in the rest, for those not found there: a pattern said thousands of times was
    listed thousands of times, where one place says it is present."""
    if len(text) <= 2 * FIRST_CHARS:
        return all_present(searcher, patterns, text)
    found = all_present(searcher, patterns, text[:FIRST_CHARS])
    if len(found) == len(patterns):
        return found
    rest = tuple(pattern for pattern in patterns if pattern not in found)
    # The rest starts early enough for a pattern across the cut to be found whole.
    longest = max(map(len, rest))
    tail = text[max(FIRST_CHARS - longest + 1, 0) :]
    return found | all_present(automaton(rest), rest, tail)


def all_present(searcher: BytesAhoCorasick, patterns: tuple[bytes, ...], text: bytes) -> set[bytes]:
    """Which of ``patterns`` occur in ``text``, from every match (of one of them: not of
    what :func:`automaton` adds)."""
    found = searcher.find_matches_as_indexes(text, overlapping=True)
    return {patterns[i] for i, _, _ in found if i < len(patterns)}


@lru_cache(maxsize=256)
def automaton(patterns: tuple[bytes, ...]) -> BytesAhoCorasick:
    """``patterns`` as one automaton, kept for the sets searched last. It holds
    :data:`_NO_PREFILTER` too, after them: found in no text the judge searches (each is
    ASCII), and never counted as one of them."""
    return BytesAhoCorasick(patterns + _NO_PREFILTER, implementation=Implementation.DFA)


#: Four patterns of a byte outside ASCII each, in every automaton so that it has no
#: prefilter: an automaton of a few patterns first looks for their rarest bytes (or for
#: their first, a space for the spelled views' words), which in random text, or between
#: the words of any text, stand every few bytes, and each restarts the automaton: 1.6
#: against 0.44 ms for the two secrets' five patterns over random base 85, 1.2 against
#: 0.57 ms for the number words over prose. (Four distinct first bytes, and four distinct
#: rarest ones, are more than a prefilter takes.)
_NO_PREFILTER: Final = tuple(bytes([byte]) for byte in range(0x80, 0x84))
