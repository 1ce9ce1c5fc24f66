"""Many tokens cut at once (numpy) show what each token cut alone shows."""

from __future__ import annotations

import base64
import random
import re
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from palaestra.rules.judge import bytes as judge_bytes
from palaestra.rules.judge import ciphered as judge_ciphered
from palaestra.rules.judge import classes as judge_classes
from palaestra.rules.judge import decoders as dec
from palaestra.rules.judge import digits
from palaestra.rules.judge import groups as judge_groups
from palaestra.rules.judge import tokens as judge_tokens
from palaestra.rules.judge import words as judge_words
from palaestra.rules.judge.runs import (
    _PRINTABLE_RUN,
    ClassRuns,
    long_runs,
    printable_runs,
    true_runs,
)
from palaestra.rules.judge.tokens import MANY_TOKENS, Spec, decoded_many
from palaestra.rules.judge.unicode import unicode_candidates, unicode_pieces

#: Each decoding's tokens as its view finds them: how it drops, its block, its decoder of
#: many pieces and its sign.
_CUTS = {
    "base64": (dec._NOT_B64, 4, digits.b64_many, dec._TOKEN_SIGNED["base64"]),
    "base32": (dec._NOT_B32, 8, digits.b32_many, dec._TOKEN_SIGNED["base32"]),
    "hex": (dec._HEX_SKIP, 2, digits.hex_many, dec._TOKEN_SIGNED["hex"]),
    "ascii85": (dec._SPACE, 5, digits.a85_many, dec._base85_token),
    "base85": (dec._SPACE, 5, digits.rfc1924_many, dec._base85_token),
}
_ENCODE: dict[str, Callable[[bytes], str]] = {
    "base64": lambda raw: base64.b64encode(raw).decode(),
    "base32": lambda raw: base64.b32encode(raw).decode().rstrip("="),
    "hex": lambda raw: raw.hex(),
    "ascii85": lambda raw: base64.a85encode(raw).decode(),
    "base85": lambda raw: base64.b85encode(raw).decode(),
}
#: Characters of every alphabet, and the separators and markers the cuts drop or keep.
_PRINTABLE = st.characters(min_codepoint=0x20, max_codepoint=0x7E)
_NOISE = "aZq09+/_-xX~<>!uv{}`'\", \t\n\\\u00ad\u200b\u00e9"


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(sorted(_CUTS)),
    texts=st.lists(
        st.binary(min_size=4, max_size=40) | st.text(_PRINTABLE, min_size=4).map(str.encode),
        min_size=MANY_TOKENS,
        max_size=60,
    ),
    cuts=st.lists(st.integers(0, 9), min_size=1, max_size=8),
    noise=st.lists(st.text(_NOISE, max_size=24), max_size=20),
    marks=st.lists(st.tuples(st.integers(0, 59), st.sampled_from(_NOISE)), max_size=30),
)
def test_tokens_cut_at_once_show_what_each_cut_alone_shows(
    name: str,
    texts: list[bytes],
    cuts: list[int],
    noise: list[str],
    marks: list[tuple[int, str]],
) -> None:
    drop, block, decode, signed = _CUTS[name]
    tokens = [_ENCODE[name](b"QUILL 4821 " + raw) for raw in texts]
    tokens = [token[cuts[i % len(cuts)] :] for i, token in enumerate(tokens)]
    for at, mark in marks:  # a separator, a marker or a character of another alphabet inside
        token = tokens[at % len(tokens)]
        middle = len(token) // 2
        tokens[at % len(tokens)] = token[:middle] + mark + token[middle:]
    tokens += noise
    tokens += [
        "<~" + tokens[0] + "~>",
        tokens[1] + " gb",
        tokens[2],
        "0x" + tokens[3],
        tokens[4] + "~>",
    ]
    pieces = [p for token in tokens for p in dec._pieces(token, drop, block, signed)]
    expected = printable_runs(decode(pieces)) if pieces else None
    spec = dec._SPECS[decode]
    raw = decoded_many(tokens, spec, lambda token: dec._pieces(token, drop, block, signed))
    assert (printable_runs(raw) if raw is not None else None) == expected


_TEXT = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E)
    | st.characters(min_codepoint=0xA0, max_codepoint=0x4FF)
    | st.characters(min_codepoint=0xFF01, max_codepoint=0xFF5E),
    min_size=4,
    max_size=24,
)
_FORMS = ["utf-8", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]
#: Byte order marks, of UTF-16 either way and of UTF-32 big-endian, put before any text.
_MARKS = [b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff"]
#: Text in one of :data:`_FORMS`, after a few stray bytes.
_ENCODED_TEXT = st.tuples(st.binary(max_size=3), _TEXT, st.sampled_from(_FORMS)).map(
    lambda t: t[0] + t[1].encode(t[2])
)


@settings(max_examples=150, deadline=None)
@given(
    blobs=st.lists(
        st.binary(min_size=1, max_size=40)
        | _ENCODED_TEXT
        | st.tuples(
            st.binary(max_size=5), st.sampled_from(_MARKS), _TEXT, st.sampled_from(_FORMS)
        ).map(lambda t: t[0] + t[1] + t[2].encode(t[3])),
        min_size=1,
        max_size=40,
    ),
    cuts=st.lists(st.integers(0, 3), min_size=1, max_size=5),
)
def test_a_piece_left_out_of_the_unicode_readings_has_none(
    blobs: list[bytes], cuts: list[int]
) -> None:
    pieces = [
        base64.urlsafe_b64encode(blob).decode().rstrip("=")[cuts[i % len(cuts)] :]
        for i, blob in enumerate(blobs)
    ]
    pieces = [piece for piece in pieces if piece]
    for piece, candidate in zip(pieces, unicode_candidates(pieces), strict=True):
        if not candidate:
            raw = judge_words.b64_bytes(piece.translate(judge_words.URLSAFE))
            assert judge_bytes._unicode_readings(raw) == []


@pytest.mark.parametrize(
    "raw",
    [
        b"\xfe\xff" + "ЖЖЖЖЖЖЖЖ".encode("utf-16-be"),
        b"\xff\xfe" + "ЖЖЖЖЖЖЖЖ".encode("utf-16-le"),
        b"\x00\x00\xfe\xff" + "ЖЖЖЖЖЖЖЖЖЖ".encode("utf-16-be"),
        b"\x41\x42\x00\x00\xfe\xff" + "ЖЖЖЖЖЖЖЖЖЖ".encode("utf-16-be"),
        b"ABCD\x00\x00\xfe\xff" + "ЖЖЖЖЖЖЖЖЖЖ".encode("utf-16-be"),
    ],
    ids=["utf-16-be", "utf-16-le", "utf-32-be mark", "utf-32-be mark later", "mark at byte 4"],
)
def test_a_piece_read_through_its_byte_order_mark_alone_is_a_candidate(raw: bytes) -> None:
    # Too few zero bytes for UTF-16 to be tried without the mark.
    assert raw.count(0) * 4 < len(raw)
    assert judge_bytes._unicode_readings(raw)
    piece = base64.b64encode(raw).decode().rstrip("=")
    # Among many pieces of random bytes, each with a mark's byte but no mark.
    rng = random.Random(5)
    noise = [base64.b64encode(bytes([0xFE]) + rng.randbytes(11)).decode() for _ in range(80)]
    candidates = unicode_candidates([*noise, piece])
    assert candidates[-1]
    readings = [judge_bytes._unicode_readings(judge_words.b64_bytes(p)) for p in noise]
    assert sum(candidates[:-1]) < 8, "a mark's byte alone is no mark"
    assert all(not r for r, c in zip(readings, candidates[:-1], strict=True) if not c)


@settings(max_examples=100, deadline=None)
@given(
    blobs=st.lists(
        st.binary(min_size=9, max_size=40)
        | _ENCODED_TEXT
        | st.text("abcdefghijklmnop", min_size=12, max_size=20).map(str.encode),
        min_size=1,
        max_size=60,
    ),
    cuts=st.lists(st.integers(0, 3), min_size=1, max_size=5),
)
def test_the_pieces_cut_at_once_are_those_cut_one_by_one(
    blobs: list[bytes], cuts: list[int]
) -> None:
    # Base 64 of bytes, of text in other forms and of letters alone (no sign of base 64),
    # either alphabet, some tokens cut short.
    tokens = [
        (base64.urlsafe_b64encode if i % 2 else base64.b64encode)(blob)
        .decode()
        .rstrip("=")[cuts[i % len(cuts)] :]
        for i, blob in enumerate(blobs)
    ]
    tokens = [token for token in tokens if len(token) >= 12]
    one_by_one = [piece for token in tokens for piece in judge_bytes._pieces(token)]
    kept = [p for p, c in zip(one_by_one, unicode_candidates(one_by_one), strict=True) if c]
    assert unicode_pieces(tokens, judge_bytes._B64_SIGNS) == kept


_WORDS = st.text("abcXY12~>-_=+/", min_size=1, max_size=9)


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(sorted(_CUTS)),
    texts=st.lists(st.binary(min_size=0, max_size=30), min_size=MANY_TOKENS, max_size=60),
    tails=st.lists(
        st.tuples(st.text(" ", min_size=1, max_size=2), _WORDS, st.text(" ", max_size=2)),
        min_size=1,
        max_size=12,
    ),
)
def test_tokens_with_a_short_last_word_cut_at_once_show_what_each_cut_alone_shows(
    name: str, texts: list[bytes], tails: list[tuple[str, str, str]]
) -> None:
    """A token with spaces in it is cut at once too; one ending in a short word (``...
    ANRX gb``) is read again without it, as the cut of one token does."""
    drop, block, decode, signed = _CUTS[name]
    tokens = [_ENCODE[name](b"QUILL 4821 " + raw) for raw in texts]
    for i, (before, word, after) in enumerate(tails):
        at = (i * 7) % len(tokens)
        tokens[at] = tokens[at] + before + word + after
    tokens.append(tokens[0][:9] + " ~>" + " ab")  # a marker before the short word
    pieces = [p for token in tokens for p in dec._pieces(token, drop, block, signed)]
    expected = printable_runs(decode(pieces)) if pieces else None
    spec = dec._SPECS[decode]
    raw = decoded_many(tokens, spec, lambda token: dec._pieces(token, drop, block, signed))
    assert (printable_runs(raw) if raw is not None else None) == expected


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(
        st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-=", min_size=6)
        | st.text(_PRINTABLE, min_size=3, max_size=28).map(
            lambda text: base64.b64encode(text.encode()).decode()
        )
        | st.text(_PRINTABLE, min_size=3, max_size=28).map(
            lambda text: base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
        )
        | st.text(_PRINTABLE, min_size=3, max_size=24).map(
            lambda text: base64.b32encode(text.encode()).decode()
        )
        | st.text(_PRINTABLE, min_size=3, max_size=18).map(lambda text: text.encode().hex()),
        min_size=1,
        max_size=30,
    )
)
def test_a_word_left_unread_has_no_reading(words: list[str]) -> None:
    """The words ``words-decoded`` rules out all at once are those its reading of one word
    would read nothing in."""
    words = [word[:40] for word in words]
    text = " ".join(words)
    codes = np.frombuffer(text.encode("ascii"), np.uint8)
    lengths = np.array([len(word) for word in words])
    starts = np.cumsum(lengths + 1) - lengths - 1
    readable = judge_words._may_read(codes, starts, lengths)
    for word, kept in zip(words, readable.tolist(), strict=True):
        if not kept:
            assert judge_words._word_reading(word) is None, word


_ALPHABETS = {
    "base64": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    "base32": "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
    "hex": "0123456789abcdefABCDEF",
    "ascii85": "".join(map(chr, range(33, 118))),
    "base85": "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    "!#$%&()*+-;<=>?@^_`{|}~",
}


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    name=st.sampled_from(sorted(_CUTS)),
    spans=st.lists(st.tuples(st.integers(0, 199), st.integers(0, 60)), min_size=1, max_size=20),
)
def test_blocks_read_from_one_pass_over_the_source_read_as_laid_out(
    data: st.DataObject, name: str, spans: list[tuple[int, int]]
) -> None:
    """Long pieces' whole blocks are read once from the source (windows); the bytes are
    those of the pieces laid out one after another, refused pieces and padding included."""
    table, base, block, size = digits.GROUPS[_CUTS[name][2]]
    # The encoding's digits, now and then a character that is none.
    raw = data.draw(st.text(_ALPHABETS[name] + "~ ", max_size=200)).encode()
    source = np.frombuffer(raw.translate(table), np.uint8)
    starts = np.array([min(at, len(raw)) for at, _ in spans], np.int64)
    lengths = np.array([min(n, len(raw) - min(at, len(raw))) for at, n in spans], np.int64)
    laid_out = judge_groups._groups_laid_out(source, starts, lengths, base, block, size)
    assert judge_groups._groups_windows(source, starts, lengths, base, block, size) == laid_out


def _base85_digits(value: int) -> list[int]:
    return [value // 85**column % 85 for column in range(4, -1, -1)]


@settings(max_examples=200, deadline=None)
@given(
    near=st.lists(st.integers(-3, 3), min_size=1, max_size=12),
    noise=st.lists(st.integers(0, 84), max_size=12),
    spans=st.lists(st.tuples(st.integers(0, 80), st.integers(0, 40)), min_size=1, max_size=12),
)
def test_blocks_of_base85_past_2_32_refuse_their_pieces_as_laid_out(
    near: list[int], noise: list[int], spans: list[tuple[int, int]]
) -> None:
    """Blocks of base 85 read in 32 bits tell one past 2**32 from its first digit: blocks
    right around 2**32 (and short last groups there) refuse their pieces as the blocks
    laid out in 64 bits do."""
    digits = [d for delta in near for d in _base85_digits(2**32 - 1 + delta)] + noise
    source = np.array(digits, np.uint8)
    starts = np.array([min(at, len(digits)) for at, _ in spans], np.int64)
    lengths = np.array(
        [min(n, len(digits) - int(at)) for at, (_, n) in zip(starts, spans, strict=True)]
    )
    laid_out = judge_groups._groups_laid_out(source, starts, lengths, 85, 5, 4)
    assert judge_groups._groups_windows(source, starts, lengths, 85, 5, 4) == laid_out


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(sorted(_CUTS)),
    texts=st.lists(st.binary(min_size=1, max_size=30), min_size=1, max_size=8),
    order=st.lists(st.integers(0, 7), min_size=1, max_size=120),
    noise=st.lists(st.text(_NOISE, max_size=12), max_size=4),
)
def test_tokens_said_again_read_as_each_said_once(
    name: str, texts: list[bytes], order: list[int], noise: list[str]
) -> None:
    """A few tokens said over and over are decoded once each, and read token by token as
    the pieces of them all decoded together read."""
    drop, block, decode, signed = _CUTS[name]
    distinct = [_ENCODE[name](b"QUILL 4821 " + raw) for raw in texts] + noise
    tokens = [distinct[at % len(distinct)] for at in order]
    pieces = [p for token in tokens for p in dec._pieces(token, drop, block, signed)]
    expected = printable_runs(decode(pieces)) if pieces else None
    assert dec._decoded_tokens(tokens, drop, block, decode, signed) == expected


def test_hundreds_of_distinct_tokens_said_again_read_as_each_decoded_alone() -> None:
    """Hundreds of distinct tokens said again, their pieces decoded in one call: each
    token reads as its own pieces decoded alone, in the order the tokens came in."""
    for name, (drop, block, decode, signed) in _CUTS.items():
        rng = random.Random(name)
        distinct = [
            _ENCODE[name](b"QUILL %d " % n + rng.randbytes(rng.randrange(1, 24)))
            for n in range(300)
        ]
        # Some with a short last word, some with a character no digit, some too short.
        distinct += [token + " gb" for token in distinct[:40]]
        distinct += [token[:6] + "~" + token[6:] for token in distinct[40:80]]
        distinct += [token[:5] for token in distinct[80:120]]
        tokens = distinct * 5
        rng.shuffle(tokens)
        alone = {
            token: printable_runs(decode(pieces))
            if (pieces := dec._pieces(token, drop, block, signed))
            else None
            for token in distinct
        }
        expected = [runs for token in tokens if (runs := alone[token]) is not None]
        assert len(expected) >= 5 * 300, name  # every whole token reads as its QUILL
        assert dec._decoded_tokens(tokens, drop, block, decode, signed) == "\n".join(expected)


def test_tokens_said_again_first_and_many_others_after_read_as_all_decoded_together() -> None:
    """The first thousand tokens are a few said again, the rest hundreds of others: the
    reply is not one of a few tokens, and reads as every piece decoded together."""
    drop, block, decode, signed = _CUTS["base64"]
    rng = random.Random(5)
    said = [_ENCODE["base64"](b"QUILL %d " % n) for n in range(3)]
    others = [_ENCODE["base64"](b"4821 %d " % n + rng.randbytes(9)) for n in range(600)]
    tokens = [said[n % 3] for n in range(2 * dec._FEW_DISTINCT)] + others
    pieces = [p for token in tokens for p in dec._pieces(token, drop, block, signed)]
    expected = printable_runs(decode(pieces))
    assert expected is not None
    assert "QUILL 2" in expected
    assert "4821 599" in expected
    assert dec._decoded_tokens(tokens, drop, block, decode, signed) == expected


#: Every decoding's tokens as its view finds them in a long text (``judge.runs``).
_RUNS = {
    "base64": dec._B64_RUNS,
    "base32": dec._B32_RUNS,
    "hex": dec._HEX_RUNS,
    "ascii85": dec._A85_RUNS,
    "base85": dec._RFC1924_RUNS,
    "base64-unicode": judge_bytes._B64_RUNS,
    "hex-unicode": judge_bytes._HEX_RUNS,
    "caesar-text": judge_ciphered._TOKEN_RUNS,
}
#: Characters in and out of every class, ASCII or not, whitespace of several kinds, and one
#: past the Basic Multilingual Plane.
_RUN_CHARS = (
    "aZq09+/_-xX:.,~!uv{}`'\" \t\n\x1c\x85\xa0\\\u00ad\u200b\u2028\u3000\ufeff\u00e9\U0001f600"
)


@settings(max_examples=120, deadline=None)
@given(
    name=st.sampled_from(sorted(_RUNS)),
    pieces=st.lists(st.text(_RUN_CHARS, min_size=1, max_size=40), min_size=1, max_size=30),
    order=st.lists(st.integers(0, 29), min_size=60, max_size=400),
)
def test_the_runs_found_as_arrays_are_those_the_pattern_finds(
    name: str, pieces: list[str], order: list[int]
) -> None:
    """A long text's tokens found as arrays are the runs the token's pattern finds, in
    order, whatever the runs' lengths and the characters around them."""
    runs = _RUNS[name]
    text = "".join(pieces[at % len(pieces)] for at in order)
    text = (text * (2100 // len(text) + 1))[: max(2100, len(text))]
    assert runs.findall(text) == runs.pattern.findall(text)


@settings(max_examples=60, deadline=None)
@given(
    words=st.lists(st.text("aB3-~ \t\u00e9", max_size=16), min_size=700, max_size=900),
    length=st.sampled_from([10, 12, 14]),
)
def test_the_long_words_of_a_long_text_are_those_a_split_gives(
    words: list[str], length: int
) -> None:
    """A long text's long words, bounded from its spaces (and the longer read off the
    shorter), are the words a split at every space gives, in order."""
    text = " ".join(words) * 3  # past the few KiB from which the spaces are arrays
    assume(len(text) > 4096)
    split = tuple(w for w in judge_classes.char_classes(text).split(b"s") if len(w) >= length)
    assert judge_classes.long_words(text, length) == split


#: The characters of a run of hex's characters that matter to its cut into tokens, with
#: the prefixes as units (a generated run is mostly ``0x``, ``\x``, digits and separators).
_HEX_RUN_PARTS = st.sampled_from(
    [*"0xX\\aF19 -,:'\u200b", "0x", "0X", "\\x", "\\X", "00x", "\\\\x"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_HEX_RUN_PARTS, min_size=1, max_size=80))
def test_a_long_run_of_hex_is_cut_as_the_token_pattern_cuts_it(parts: list[str]) -> None:
    run = "".join(parts)
    assert dec.hex_run_tokens(run) == dec._HEX_TOKEN.findall(run)
    # Its digits, prefixes dropped, as the pattern drops them.
    assert dec._dropped(run, dec._HEX_SKIP) == dec._HEX_SKIP.sub("", run)


def test_a_long_run_of_escapes_is_one_token_and_its_bytes() -> None:
    escapes = "\\x41" * 1000 + "\\ \\x42\\x43" + "0x44" * 700
    assert len(escapes) > dec._LONG_RUN
    assert dec._hex_tokens(escapes) == dec._HEX_TOKEN.findall(escapes)
    assert dec._hex_tokens(escapes) == ["\\x41" * 1000, " \\x42\\x43" + "0x44" * 700]
    assert dec.hex_text(escapes + " AB12") is not None


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(
        [dec._B64_RUNS, dec._B32_RUNS, dec._HEX_RUNS, dec._A85_RUNS, dec._RFC1924_RUNS]
    ),
    st.lists(
        st.sampled_from(["QUILL", "a", "0", "-", " ", "~", "\u200b", "é", "x" * 40]), max_size=60
    ),
    st.integers(min_value=0, max_value=2),
)
def test_runs_found_as_arrays_are_what_the_pattern_finds(
    runs: ClassRuns, words: list[str], filler: int
) -> None:
    # A long text (the arrays' way) of short and long runs, ASCII or not.
    text = "".join(words) + ("-" * 3000, "a" * 3000, "é" * 3000)[filler] + "".join(words)
    assert runs.findall(text) == runs.pattern.findall(text)


_ENCODED_WORD = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=3, max_size=24
).map(lambda word: base64.b64encode(word.encode()).decode()) | st.text(
    "aZq09+/=-_QUIL4821xy", min_size=1, max_size=12
)


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(st.tuples(_ENCODED_WORD, st.sampled_from([" ", ".", ", ", "\n"])), max_size=30)
)
def test_the_words_that_look_encoded_are_the_runs_holding_a_sign(
    words: list[tuple[str, str]],
) -> None:
    # Base 64 of text (most of it read), and words of its characters (most of them not).
    text = "".join(word + gap for word, gap in words)
    classes = text.encode("ascii", "replace").translate(judge_words._WORD_CLASSES)
    runs = [found.span() for found in re.finditer(rb"[^ ]+", classes)]
    signed = [
        (start, end)
        for start, end in runs
        if judge_words._sign_starts(classes[start:end]).any()
        and judge_words._WORD_MIN <= end - start <= judge_words._WORD_MAX
    ]
    starts = np.array([start for start, _ in signed], np.int64)
    lengths = np.array([end - start for start, end in signed], np.int64)
    codes = np.frombuffer(text.encode("ascii", "replace"), np.uint8)
    readable = judge_words._may_read(codes, starts, lengths) if signed else np.zeros(0, bool)
    expected = [text[a:b] for (a, b), ok in zip(signed, readable, strict=True) if ok]
    assert judge_words._signed_words(text) == expected


_ASCII85_PARTS = st.sampled_from(
    ["<~", "~>", "<", "~", ">", " ", "\n", "v", "é", "a", "<~a~>", "!" * 10, "Q" * 40, "<~<~"]
    + ["u" * n for n in range(7, 11)]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_ASCII85_PARTS, max_size=60), st.integers(0, 2))
@example(["<~a~>", "u" * 8, "<~a~>"], 0)  # a run of nine and the ``<``: no run of ten
@example(["<~a~>", "u" * 9, "<~a~>"], 0)  # a run of ten takes the ``<``
def test_ascii85_tokens_are_what_the_pattern_finds(parts: list[str], filler: int) -> None:
    """Marked tokens found where the pattern tries them (not where a run of ten takes the
    ``<``, nor inside an earlier token), and runs between them, in a short text and in a
    long one (whose runs are found as arrays)."""
    text = "".join(parts)
    text += ("", "x" * 3000, " " * 3000)[filler] + text
    assert list(dec.ascii85_tokens(text)) == dec._B85_TOKEN.findall(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.booleans(), max_size=80))
def test_true_runs_are_where_each_run_of_true_places_starts_and_ends(flags: list[bool]) -> None:
    mask = np.array(flags, bool)
    starts, ends = true_runs(mask)
    written = "".join("1" if flag else "0" for flag in flags)
    spans = [found.span() for found in re.finditer("1+", written)]
    assert list(zip(starts.tolist(), ends.tolist(), strict=True)) == spans


def _may_read_one(word: str) -> bool:
    """``judge_words._may_read`` of one word, a step of Python per test: its first six
    characters may start a reading, and the whole word may be one."""
    w = judge_words
    values = [int(w._B64_VALUES[ord(c)]) for c in word]

    def b64_bytes_printable(count: int) -> bool:
        made = [
            (values[r] << (2 + 2 * (r % 4))) & 0xFF | values[r + 1] >> max(4 - 2 * (r % 4), 0)
            for r in range(count)
            if r % 4 < 3
        ]
        return all(0x20 <= byte <= 0x7E for byte in made)

    def one_case(chars: str) -> bool:
        return not (any("A" <= c <= "Z" for c in chars) and any("a" <= c <= "z" for c in chars))

    start = word[: w._START]
    if len(word) >= w._START and not (
        "=" in start
        or (all(c in w._HEX_CHARS for c in start) and one_case(start))
        or (all(c in w._B32_CHARS for c in start) and one_case(start))
        or b64_bytes_printable(3)
    ):
        return False
    bare = len(word.rstrip("="))
    hex_ = all(c in w._HEX_CHARS for c in word) and one_case(word) and len(word) >= 8
    b32 = all(c in w._B32_CHARS for c in word) and one_case(word)
    if "=" in word[:bare]:
        codes = np.array([ord(c) for c in word], np.uint8)
        b64 = bool(
            w._first_bytes_printable(
                w._B64_VALUES[codes], codes == ord("="), np.array([0]), np.array([len(word)])
            )[0]
        )
    else:
        b64 = b64_bytes_printable(max(bare - 1, 0)) and bare % 4 != 1 and bare * 6 // 8 >= 4
    return (hex_ and len(word) % 2 == 0) or (b32 and (bare >= 8 or 2 <= bare < len(word))) or b64


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text("aZq09+/=-_QUIL4821xyB7f", min_size=1, max_size=40), max_size=30))
def test_the_words_that_may_read_are_those_each_test_alone_lets_through(
    words: list[str],
) -> None:
    """Each word's tests, its kinds or-ed over it (and over its first characters, a row per
    place), let through what they let through a word at a time."""
    text = " ".join(words)
    codes = np.frombuffer(text.encode("ascii"), np.uint8)
    lengths = np.array([len(word) for word in words], np.int64)
    starts = np.cumsum(lengths + 1) - lengths - 1
    readable = judge_words._may_read(codes, starts, lengths) if words else np.zeros(0, bool)
    assert readable.tolist() == [_may_read_one(word) for word in words]


@settings(max_examples=400, deadline=None)
@given(
    tokens=st.lists(st.text("lupds", min_size=1, max_size=14), min_size=1, max_size=20),
    signs=st.sampled_from(
        [
            judge_bytes._B64_SIGNS,
            dec._SIGNS["base64"],
            dec._SIGNS["base32"],
            dec._SIGNS["hex"],
        ]
    ),
)
def test_a_token_holds_a_sign_when_its_classes_hold_one(
    tokens: list[str], signs: tuple[bytes, ...]
) -> None:
    """The signs found for every place at once, those that run into the next token left
    out, are each token's own."""
    classes = np.frombuffer("".join(tokens).encode(), np.uint8)
    lengths = np.array([len(token) for token in tokens])
    starts = np.cumsum(lengths) - lengths
    expected = [any(sign in token.encode() for sign in signs) for token in tokens]
    assert judge_tokens._signed(classes, starts, signs).tolist() == expected


@settings(max_examples=200, deadline=None)
@given(
    runs=st.sampled_from([dec._B64_RUNS, dec._B32_RUNS, dec._A85_RUNS, dec._RFC1924_RUNS]),
    words=st.lists(
        st.sampled_from(["QUILL", "a", "0", "-", " ", "~", "é", "x" * 12, "aB3+/9zQ~<"]),
        max_size=60,
    ),
    filler=st.integers(0, 2),
)
def test_tokens_read_off_their_text_are_the_runs_joined(
    runs: ClassRuns, words: list[str], filler: int
) -> None:
    """A text's runs kept as bounds are its runs, one by one and joined, short text or
    long, ASCII or not; and decoded at once they read as the same runs as a list."""
    text = "".join(words) + ("", "-" * 3000, "é" * 3000)[filler] + "".join(words)
    tokens = runs.tokens(text)
    listed = runs.pattern.findall(text)
    assert list(tokens) == listed
    assert tokens.joined() == "".join(listed).encode("ascii", "replace")
    assert tokens.lengths.tolist() == [len(token) for token in listed]
    for spec in (dec._SPECS[digits.b64_many], dec._SPECS[digits.a85_many]):
        assert decoded_many(tokens, spec, _cut(spec)) == decoded_many(listed, spec, _cut(spec))


def _cut(spec: Spec) -> Callable[[str], list[str]]:
    drop, block, _, signed = next(cut for cut in _CUTS.values() if dec._SPECS[cut[2]] is spec)
    return lambda token: dec._pieces(token, drop, block, signed)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([b"a", b"ab", b"abc", b"abcd", b"\x00", b"\x7f", b"\x1f", b" ", b"~~~~~"]),
        max_size=80,
    ),
    st.integers(1, 200),
)
def test_the_printable_runs_found_as_arrays_are_those_the_pattern_finds(
    parts: list[bytes], repeat: int
) -> None:
    """Runs of four printable bytes or more, at either end or between others, in bytes
    long enough to be read as arrays: the pattern's runs, one a line."""
    raw = b"".join(parts) * repeat + b"\x00" * 4100 + b"".join(parts)
    runs = _PRINTABLE_RUN.findall(raw)
    assert printable_runs(raw) == (b"\n".join(runs).decode() if runs else None)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.booleans(), max_size=80), st.integers(1, 20))
def test_the_long_runs_are_the_true_runs_at_least_so_long(flags: list[bool], least: int) -> None:
    mask = np.array(flags, bool)
    starts, ends = true_runs(mask)
    long = ends - starts >= least
    found = long_runs(mask, least)
    assert (found[0].tolist(), found[1].tolist()) == (starts[long].tolist(), ends[long].tolist())
