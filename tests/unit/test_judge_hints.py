"""What the views tell from arrays (the ``separators`` view's patterns, the signs of a long
text's character classes) is what the patterns and searches find."""

from __future__ import annotations

import itertools
import random

from hypothesis import example, given, settings
from hypothesis import strategies as st

from palaestra.rules.judge import classes, hints
from palaestra.rules.judge import views as judge_views

#: Letters, digits, every separator and quote, whitespace of several kinds, other marks.
_CHARS = "aZ7_ .-*|/\t\n\x0b\x1c\"'`+,:x"


@settings(max_examples=600, deadline=None)
@given(text=st.text(_CHARS, max_size=40))
def test_the_arrays_tell_what_the_patterns_find(text: str) -> None:
    assert hints._spaced(text) == (judge_views._SPACED_HINT.search(text) is not None)
    assert hints._literal_join(text) == (judge_views._LITERAL_JOIN.search(text) is not None)


def test_a_long_text_is_told_from_arrays_as_the_pattern_tells_it() -> None:
    """Past a few KiB of ASCII the arrays answer; both ways, the answer is the pattern's,
    found and not found."""
    rng = random.Random(5)
    spaced = hints.spaced_hint(judge_views._SPACED_HINT)
    joins = hints.literal_join_hint(judge_views._LITERAL_JOIN)
    answers = set()
    for _ in range(40):
        # Words of two letters or more, marks and quotes beside them: no single letter.
        filler = " ".join(
            rng.choice(["ab", "cde,", "12:", '"fg":', "'hi',", "x9."]) for _ in range(1500)
        )
        at = rng.randrange(len(filler))
        for inserted in (
            "",
            " Q U I ",
            " Q.U-I ",
            ' "QUI" + \n"LL"',
            " 'a'  'b'",
            "`x``",
            " \u00e9 Q U I",
        ):
            text = filler[:at] + inserted + filler[at:]
            found = (judge_views._SPACED_HINT.search(text), judge_views._LITERAL_JOIN.search(text))
            assert spaced(text) == (found[0] is not None), text
            assert joins(text) == (found[1] is not None), text
            answers.add((found[0] is not None, found[1] is not None, text.isascii()))
    # Each answer was given by the arrays (ASCII) both ways, and by the pattern (not ASCII).
    assert {(True, False, True), (False, True, True), (False, False, True)} <= answers
    assert any(not ascii_only for *_, ascii_only in answers)


@settings(max_examples=300, deadline=None)
@given(text=st.text(_CHARS, min_size=1, max_size=60), repeat=st.integers(-2, 3))
@example(text="x b cd ", repeat=1).via("a word after the second single character")
@example(text="x b -cd ", repeat=1).via("two separators, then a word")
def test_the_pairs_found_from_arrays_are_where_the_pattern_matches(text: str, repeat: int) -> None:
    # Repeated past 4 KiB, or just short of it (the pattern's own search then).
    text = text * (4096 // len(text) + repeat)
    expected = [
        at for at in range(len(text)) if judge_views._SPACED_PAIR.match(text, at) is not None
    ]
    places = hints.spaced_pairs(text)
    if len(text) <= 4096:
        assert places is None
    else:
        assert places is not None
        assert places.tolist() == expected
    assert judge_views.separators(text) == _separators_by_pattern(text)


def _separators_by_pattern(text: str) -> str | None:
    """The view as it searched its pairs with the pattern, one place after another."""
    joined = text
    if judge_views._LITERAL_JOIN.search(joined):
        joined = judge_views._LITERAL_JOIN.sub("", joined)
    if judge_views._SPACED_HINT.search(joined):
        pieces: list[str] = []
        last = at = 0
        while (pair := judge_views._SPACED_PAIR.search(joined, at)) is not None:
            at = pair.start() + 1
            for start in range(max(last, pair.start() - 2), pair.start()):
                run = judge_views._SPACED.match(joined, start)
                if run is not None:
                    pieces += (joined[last:start], judge_views._close(run.group()))
                    last = at = run.end()
                    break
        joined = "".join(pieces) + joined[last:] if pieces else joined
    return joined if joined != text else None


#: Every sign of two to four classes.
_SIGNS = [bytes(sign) for n in (2, 3, 4) for sign in itertools.product(b"dlpsu", repeat=n)]


@settings(max_examples=60, deadline=None)
@given(text=st.text("aZ7 .-\t\u00e9\U0001f600", min_size=1, max_size=8), repeat=st.integers(1, 900))
def test_a_long_text_holds_the_signs_its_classes_hold(text: str, repeat: int) -> None:
    long = "Quill 4821 " * 500 + text * repeat  # long: the pairs are looked up first
    held = classes.char_classes(long)
    assert [classes.holds(long, sign) for sign in _SIGNS] == [sign in held for sign in _SIGNS]
    # Several signs: whether it holds one of them.
    twos = list(zip(_SIGNS[::2], _SIGNS[1::2], strict=False))
    assert [classes.holds(long, *two) for two in twos] == [
        two[0] in held or two[1] in held for two in twos
    ]


@settings(max_examples=400, deadline=None)
@given(
    parts=st.lists(
        st.sampled_from(['"', "'", "`", " ", "+", "  + ", "\t", "a", "''", '" "']), max_size=40
    ),
    filler=st.sampled_from(["", "x" * 4100, "'a' " * 1100]),
)
@example(parts=["'", "'", "'", "'", "'"], filler="x" * 4100)  # a row of joins: every other one
def test_adjacent_literals_joined_from_arrays_are_what_the_pattern_joins(
    parts: list[str], filler: str
) -> None:
    """A long text of ASCII has its joins of adjacent literals found from arrays, and a row
    of them, each starting at the one before's closing quote, taken every other one."""
    text = filler + "".join(parts) + filler
    removed = hints.literal_joins_removed(judge_views._LITERAL_JOIN)
    assert removed(text) == judge_views._LITERAL_JOIN.sub("", text)
