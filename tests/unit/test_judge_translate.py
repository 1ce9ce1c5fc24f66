"""A text read through a table as arrays of code points reads as ``str.translate`` reads it:
for short texts and long ones, readings of no character, one or several, any character."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from palaestra.rules.judge import match as judge_match
from palaestra.rules.judge import skeleton as judge_skeleton
from palaestra.rules.judge.translate import Translation


def _reading(char: str) -> str:
    # Dropped, kept, or read as several characters, by the code point: every shape of
    # reading a table can hold, outside ASCII included.
    code = ord(char)
    return ("", char.upper(), f"<{code:x}>", "\u00e9\U0001f600")[code % 4]


_TRANSLATION = Translation(_reading)
#: Letters, look-alikes, emoji, marks, a lone surrogate, characters that NFKC spreads over
#: several: a long text of them is read as arrays.
_CHARACTERS = (
    st.sampled_from(
        "aZ09 -.\u0430\u0435\u0406\u03a3\u03c2\u03f9\U0001f600\u2603\u2800\ufe0f\u200b"
        "\u0130\u212a\u00df\ufb01\u0661\u00e9\u0301\uff21\ud800\ufdfa\uffff\U000e0051"
    )
    | st.characters()
)
_TEXTS = st.lists(_CHARACTERS, max_size=1200).map("".join)


@settings(max_examples=200, deadline=None)
@given(text=_TEXTS)
def test_a_translation_reads_a_text_as_str_translate_does(text: str) -> None:
    expected = text.translate({ord(c): _reading(c) for c in text})
    assert _TRANSLATION(text) == expected


@settings(max_examples=200, deadline=None)
@given(text=_TEXTS)
def test_a_long_text_folds_and_has_the_skeleton_its_characters_have_one_by_one(
    text: str,
) -> None:
    text = text * (600 // max(len(text), 1) + 1)  # past the length read as arrays
    folded = "".join(c.lower() if c.isascii() else judge_match._fold_char(c) for c in text)
    assert judge_match.fold_view(text) == folded
    by_character = text.translate({ord(c): judge_skeleton._character_skeleton(c) for c in text})
    if judge_skeleton._SIGMA in by_character:
        by_character = judge_skeleton._skeleton_of(text)
    assert judge_skeleton.skeleton(text) == by_character


def test_a_text_of_characters_all_dropped_reads_as_nothing() -> None:
    assert _reading("\u0430") == ""
    assert _TRANSLATION("") == _TRANSLATION("\u0430") == _TRANSLATION("\u0430" * 1000) == ""
