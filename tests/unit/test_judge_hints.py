"""The ``separators`` view's patterns told from arrays of flags find what the patterns find."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from palaestra.rules.judge import hints
from palaestra.rules.judge import views as judge_views

#: Letters, digits, every separator and quote, whitespace of several kinds, other marks.
_CHARS = "aZ7_ .-*|/\t\n\x0b\x1c\"'`+,:x"


@settings(max_examples=600, deadline=None)
@given(text=st.text(_CHARS, max_size=40))
def test_the_arrays_tell_what_the_patterns_find(text: str) -> None:
    data = text.encode("ascii")
    assert hints._spaced(data) == (judge_views._SPACED_HINT.search(text) is not None)
    assert hints._literal_join(data) == (judge_views._LITERAL_JOIN.search(text) is not None)


def test_a_long_text_is_told_from_arrays_as_the_pattern_tells_it() -> None:
    """Past a few KiB of ASCII the arrays answer; both ways, the answer is the pattern's."""
    rng = random.Random(5)
    spaced = hints.spaced_hint(judge_views._SPACED_HINT)
    joins = hints.literal_join_hint(judge_views._LITERAL_JOIN)
    for _ in range(40):
        filler = "".join(rng.choice("ab cd, ef: 12 ") for _ in range(6000))
        at = rng.randrange(len(filler))
        for inserted in (
            "",
            " Q U I",
            "Q.U-I",
            ' "QUI" + \n"LL"',
            "'a'  'b'",
            "`x``",
            "\u00e9 Q U I",
        ):
            text = filler[:at] + inserted + filler[at:]
            assert spaced(text) == (judge_views._SPACED_HINT.search(text) is not None), text
            assert joins(text) == (judge_views._LITERAL_JOIN.search(text) is not None), text
