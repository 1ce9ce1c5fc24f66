"""Each of the judge's canonical views on its own: what it reads, and when it stays out.

Inputs are made with the standard library, never through the views. A view returns
``None`` when it has nothing to read: that is what keeps the judge cheap, so it is tested
as carefully as the readings.
"""

from __future__ import annotations

import base64
import codecs
import html
import html.entities
import quopri
import re
import urllib.parse
from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from palaestra.rules.judge import cipher_tables, ciphered, letters, present, spelled, tags, views
from palaestra.rules.judge import decoders as dec
from palaestra.rules.judge import escapes as esc
from palaestra.rules.judge import regrouped as judge_regrouped
from palaestra.rules.judge.chains import depth2_budget, view_chains
from palaestra.rules.judge.folding import fold
from palaestra.rules.judge.match import fold_view
from tests.unit.test_judge_smuggling import VIEW_TABLE as SMUGGLING_TABLE

CODE = "QUILL-4821-ZEBRA"
B64 = base64.b64encode(CODE.encode()).decode()
B32 = base64.b32encode(CODE.encode()).decode()
HEX = CODE.encode().hex()
HEX_PAIRS = CODE.encode().hex(" ").upper()
ABC = "abcdefghijklmnopqrstuvwxyz"


def caesar(text: str, shift: int) -> str:
    moved = ABC[shift:] + ABC[:shift]
    return text.translate(str.maketrans(ABC + ABC.upper(), moved + moved.upper()))


def atbash(text: str) -> str:
    return text.translate(str.maketrans(ABC + ABC.upper(), ABC[::-1] + ABC[::-1].upper()))


def rot47(text: str) -> str:
    return "".join(chr(33 + (ord(c) - 33 + 47) % 94) if "!" <= c <= "~" else c for c in text)


def contains(expected: str) -> Callable[[str | None], bool]:
    return lambda read: read is not None and fold(expected) in fold(read)


TABLE: list[tuple[str, Callable[[str], str | None], str, str | None]] = [
    # (id, view, input, what the reading must contain once folded; None: stays out)
    ("confusables-cyrillic", views.confusables, "QU\u0406LL", "quill"),
    ("confusables-greek", views.confusables, "\u0391\u0392\u0395", "abe"),
    ("confusables-math-bold", views.confusables, "\U0001d42a\U0001d42e", "qu"),
    ("confusables-accents", views.confusables, "ZÉBRA", "zebra"),
    ("confusables-ascii", views.confusables, "QUILL", None),
    ("leet", views.leet, "QU1LL-4821-ZEBR4", "quiii abzi zebra"),
    ("leet-symbols", views.leet, "p@$$w0rd", "password"),
    ("leet-words", views.leet, "no digits here", None),
    ("leet-digits-apart", views.leet, "ANSWER: 42", None),
    ("separators-zero-width", views.separators, "QUI\u200bLL", "quill"),
    ("separators-soft-hyphen", views.separators, "QUI\u00adLL", "quill"),
    ("separators-literals", views.separators, '"QUI" + "LL"', "quill"),
    ("separators-adjacent-literals", views.separators, "'QUI' 'LL'", "quill"),
    ("separators-spaced", views.separators, "word Q U I L L here", "quill"),
    ("separators-none", views.separators, "plain words only", None),
    ("html-tags", tags.html_tags, "<b>QUI</b>LL", "quill"),
    ("html-comment", tags.html_tags, "QU<!-- -->ILL", "quill"),
    ("html-tags-none", tags.html_tags, "a < b and c > d", None),
    ("number-words-digits", spelled.number_words, "four eight two one", "4821"),
    ("number-words-pairs", spelled.number_words, "forty-eight twenty-one", "4821"),
    (
        "number-words-cardinal",
        spelled.number_words,
        "four thousand eight hundred and twenty-one",
        "4821",
    ),
    ("number-words-year", spelled.number_words, "nineteen eighty-four", "1984"),
    ("number-words-dashes-only", spelled.number_words, "four-eight-two-one", "4821"),
    ("number-words-one", spelled.number_words, "one of them", None),
    ("number-words-inside-a-word", spelled.number_words, "someone two", None),
    ("nato", spelled.nato, "Quebec Uniform India Lima Lima", "quill"),
    ("nato-digits", spelled.nato, "Zulu Echo Bravo niner tree", "zeb 93"),
    ("nato-x-ray", spelled.nato, "X-ray Romeo Alfa Yankee", "xray"),
    ("nato-two-words", spelled.nato, "golf and hotel", None),
    ("nato-a-lone-x", spelled.nato, "alfa bravo lima, 3 x 4", "abl"),
    ("nato-marks-only", spelled.nato, "quebec.uniform|india", "qui"),
    ("letter-names-marks-only", letters.letter_names, "pee;double-u;en;ee;dee", "pwned"),
    ("morse", spelled.morse, "--.- ..- .. .-.. .-..", "quill"),
    ("morse-words", spelled.morse, "....- ---.. / ..--- .----", "48 21"),
    ("morse-look-alikes", spelled.morse, "−−·− ··− ·· ·−·· ·−··", "quill"),
    ("morse-none", spelled.morse, "A sentence - with a dash.", None),
    ("percent", esc.percent, "%51%55ILL", "quill"),
    ("percent-none", esc.percent, "100% sure", None),
    ("html-entities", esc.html_entities, "&#81;&#x55;&Iopf;LL", "quill"),
    ("html-entities-none", esc.html_entities, "fish & chips", None),
    ("escapes-json", esc.escapes, "\\u0051\\u0055ILL", "quill"),
    ("escapes-python", esc.escapes, "\\x51\\125\\N{LATIN CAPITAL LETTER I}LL", "quill"),
    ("escapes-none", esc.escapes, "C:\\temp", None),
    ("quoted-printable", esc.quoted_printable, "=51=55I=\nLL", "quill"),
    ("quoted-printable-none", esc.quoted_printable, "a = b", None),
    ("decimal-codes", esc.decimal_codes, "81, 85, 73, 76, 76", "quill"),
    ("decimal-codes-none", esc.decimal_codes, "rooms 81 and 85", None),
    ("octal-codes", esc.octal_codes, "121 125 111 114 114", "quill"),
    ("binary-codes", esc.binary_codes, "1010001 1010101 1001001 1001100 1001100", "quill"),
    ("hex", dec.hex_text, CODE.encode().hex(), CODE),
    ("hex-glued", dec.hex_text, "x" + CODE.encode().hex(), CODE),
    ("hex-none", dec.hex_text, "a bad cafe", None),
    ("base64", dec.base64_text, base64.b64encode(CODE.encode()).decode(), CODE),
    (
        "base64-urlsafe",
        dec.base64_text,
        base64.urlsafe_b64encode(b"\xfb" + CODE.encode()).decode(),
        CODE,
    ),
    ("base64-prose", dec.base64_text, "The quick brown fox jumps over the lazy dog", None),
    ("base32", dec.base32, base64.b32encode(CODE.encode()).decode(), CODE),
    ("base32-prose", dec.base32, "plain lower case words", None),
    ("base85", dec.base85, base64.b85encode(CODE.encode()).decode(), CODE),
    ("ascii85", dec.ascii85, base64.a85encode(CODE.encode()).decode(), CODE),
    ("ascii85-prose", dec.ascii85, "Nothing like it here.", None),
    ("rot47", views.rot47, "".join(chr(33 + (ord(c) - 33 + 47) % 94) for c in CODE), CODE),
    ("rot47-prose", views.rot47, "Hello, world.", None),
    ("acrostic-lines", views.acrostic_lines, "Quiet\n- Under\n  Idle\nLong\nLanes", "quill"),
    ("acrostic-lines-short", views.acrostic_lines, "Quiet\nUnder", None),
    ("acrostic-words", views.acrostic_words, "Quiet (under) idle long lanes", "quill"),
    ("acrostic-words-short", views.acrostic_words, "two words", None),
    (
        "rot13-text",
        views.rot13_text,
        codecs.encode("UVVJTEwtNDgyMS1aRUJSQQ== then", "rot13"),
        "UVVJTEwtNDgyMS1aRUJSQQ",
    ),
    ("rot13-text-prose", views.rot13_text, "Nothing encoded in these words", None),
    ("caesar-text-base64", ciphered.caesar_text, caesar(B64, 3), B64.rstrip("=")),
    ("caesar-text-base64-back", ciphered.caesar_text, caesar(B64, 25), B64.rstrip("=")),
    ("caesar-text-hex", ciphered.caesar_text, caesar(HEX, 10), HEX),
    ("caesar-text-upper-hex", ciphered.caesar_text, caesar(HEX.upper(), 3), HEX.upper()),
    ("caesar-text-base32", ciphered.caesar_text, caesar(B32, 11), B32.rstrip("=")),
    ("caesar-text-prose", ciphered.caesar_text, "Nothing encoded in these words", None),
    ("caesar-text-hex-pairs", ciphered.caesar_text, caesar(HEX_PAIRS, 3), HEX),
    ("caesar-text-hex-pairs-rot13", ciphered.caesar_text, caesar(HEX_PAIRS, 13), HEX),
    ("caesar-text-numbers", ciphered.caesar_text, "rooms 21 22 23 24 25 26 27 28 29", None),
    ("caesar-text-hex-a-to-f", ciphered.caesar_text, "6162636465666a6b6c6d6e6f", None),
    ("caesar-text-hash", ciphered.caesar_text, "commit 3f9a2c7e1b4d8a6f0e2c9b7a5d3f1e8c", None),
    ("atbash-text-base64", ciphered.atbash_text, atbash(B64), B64.rstrip("=")),
    ("atbash-text-hex", ciphered.atbash_text, atbash(HEX), HEX),
    ("atbash-text-prose", ciphered.atbash_text, "Sentences in prose, 12 words long", None),
    ("rot47-hex", views.rot47, rot47(HEX), HEX),
    ("rot47-hex-upper", views.rot47, rot47(HEX.upper()), HEX.upper()),
]


@pytest.mark.parametrize(
    ("view", "text", "expected"), [t[1:] for t in TABLE], ids=[t[0] for t in TABLE]
)
def test_view(view: Callable[[str], str | None], text: str, expected: str | None) -> None:
    read = view(text)
    if expected is None:
        assert read is None
    else:
        assert read is not None
        assert fold(expected) in fold(read)


def test_every_view_has_rows_that_read_and_rows_that_stay_out() -> None:
    rows = TABLE + SMUGGLING_TABLE
    reading = {t[1] for t in rows if t[3] is not None}
    out = {t[1] for t in rows if t[3] is None}
    every = {v.read for v in views.VIEWS} - {views.reversed_text, views.rot13_text}
    assert every <= reading
    assert every - {esc.octal_codes, esc.binary_codes, dec.base85} <= out


def test_the_decoders_read_the_stdlibs_encodings_of_any_text() -> None:
    text = "Meet at the old mill, 9pm."
    for read, encoded in [
        (dec.base64_text, base64.b64encode(text.encode()).decode()),
        (dec.base32, base64.b32encode(text.encode()).decode()),
        (dec.base85, base64.b85encode(text.encode()).decode()),
        (dec.ascii85, base64.a85encode(text.encode()).decode()),
        (dec.hex_text, text.encode().hex()),
        (esc.percent, urllib.parse.quote(text, safe="")),
        (esc.html_entities, html.escape(text).replace("M", "&#77;")),
        (esc.quoted_printable, quopri.encodestring(text.encode(), quotetabs=True).decode()),
    ]:
        assert contains(text)(read(encoded)), read.__name__


def test_skeleton_is_tr39s_and_leaves_ascii_alone() -> None:
    assert views.skeleton("QUILL-4821") == "quill-4821"
    assert views.skeleton("\u0455\u0440\u0435\u0441\u0456\u0430l") == "special"


@pytest.mark.parametrize("cipher", views.CIPHERS, ids=lambda c: c.name or "plain")
def test_each_cipher_undoes_what_it_does(cipher: views.Cipher) -> None:
    parts = ("quill", "4821", "zebra")
    shown = " ".join(cipher.apply(parts))
    assert cipher.undo(shown).split() == list(parts)


def test_the_ciphers_are_all_25_caesar_shifts_atbash_and_the_reversals() -> None:
    names = [c.name for c in views.CIPHERS]
    assert names[:4] == ["", "reversed", "reversed-parts", "rot13"]
    letters = names[3:29]
    assert sorted(n for n in letters if n.startswith("caesar-")) == sorted(
        f"caesar-{n}" for n in range(1, 26) if n != 13
    )
    assert letters[-1] == "atbash"
    # Each letter cipher also written backwards.
    assert names[29:] == [f"{name}-reversed" for name in letters]
    assert len(names) == len(set(names)) == 55
    backwards = {c.name: c for c in views.CIPHERS}["caesar-4-reversed"]
    assert backwards.apply(("quill", "4821", "zebra")) == ("evfid", "1284", "ppmyu")


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("QUILL-4821", "quill-4821"),
        ("ＱＵＩＬＬ", "quill"),
        ("\u0664\u0668\u0662\u0661", "4821"),  # Arabic-Indic digits
        ("\u096a\u096e", "48"),  # Devanagari digits
        ("QU\u0406LL", "qu ll"),  # a look-alike is a separator here; confusables reads it
        ("straße", "strasse"),
    ],
)
def test_fold_view(text: str, folded: str) -> None:
    assert fold_view(text) == folded


CHAINS = [
    ("base64-of-reversed", base64.b64encode(CODE[::-1].encode()).decode(), ("base64",)),
    ("hex-of-base64", base64.b64encode(CODE.encode()).hex(), ("hex", "base64")),
    (
        "reversed-base64",
        base64.b64encode(CODE.encode()).decode()[::-1],
        ("reversed-text", "base64"),
    ),
    (
        "entities-of-hex",
        "".join(f"&#{ord(c)};" for c in CODE.encode().hex()),
        ("html-entities", "hex"),
    ),
    (
        "percent-of-base32",
        urllib.parse.quote(base64.b32encode(CODE.encode()).decode()),
        ("percent", "base32"),
    ),
]


@pytest.mark.parametrize(("text", "chain"), [c[1:] for c in CHAINS], ids=[c[0] for c in CHAINS])
def test_views_compose_to_depth_two(text: str, chain: tuple[str, ...]) -> None:
    assert chain in [names for names, _ in view_chains(text)]


def test_no_chain_is_deeper_than_two_and_a_last_view_is_never_read_again() -> None:
    reply = base64.b64encode(("line\n" * 10 + CODE).encode()).hex()
    chains = [names for names, _ in view_chains(reply)]
    assert all(len(names) <= 2 for names in chains)
    assert not [n for n in chains if n[0].startswith("acrostic") and len(n) == 2]


def test_depth_two_stops_at_its_budget_deterministically() -> None:
    assert depth2_budget(1000) == 65_536 + 8_000
    blob = base64.b64encode(bytes(range(256)) * 400).decode()
    first = [names for names, _ in view_chains(blob)]
    assert first == [names for names, _ in view_chains(blob)]
    depth2 = [n for n in first if len(n) == 2]
    assert len(depth2) < 60


def fitting(token: str, encoding: str) -> list[str]:
    fits = ciphered.fitting_ciphers(token.rstrip("="), encoding)
    return [name for i, name in enumerate(cipher_tables.CIPHER_NAMES) if fits >> i & 1]


@pytest.mark.parametrize("shift", [n for n in range(1, 26) if n != 13])
@pytest.mark.parametrize(
    ("encoding", "encoded"),
    [("base64", B64), ("base32", B32), ("hex", HEX), ("hex", HEX.upper())],
    ids=["base64", "base32", "hex", "HEX"],
)
def test_the_cipher_over_an_encoding_is_read_off_the_token(
    encoding: str, encoded: str, shift: int
) -> None:
    """Each shift, and Atbash, over each encoding fits; and so few others that a token is
    read back a handful of times at most, not 25."""
    for cipher, made in ((f"caesar-{shift}", caesar(encoded, shift)), ("atbash", atbash(encoded))):
        names = fitting(made, encoding)
        assert cipher in names
        assert len(names) <= 6, (cipher, names)


def test_a_short_word_after_an_encoded_token_does_not_change_its_end() -> None:
    """The decodings rejoin a token across whitespace, so a short word after it is glued
    on and its bits add a character at the end ("... 73 67" read as "... 73 670"); the
    token is also read without it."""
    text = " ".join(str(ord(c)) for c in "PIXEL-7825-MOSAIC")
    encoded = base64.b32encode(text.encode()).decode()
    assert "=" not in encoded  # nothing marks where the token ends
    read = dec.base32(f"{encoded} gb")
    assert read is not None
    assert text in read.splitlines()


_NAMES = sorted(html.entities.html5)
_OLD_NAMES = [name for name in _NAMES if not name.endswith(";")]  # read with no ``;``
_REFERENCE_PARTS = (
    st.sampled_from(_NAMES).map(lambda name: "&" + name)
    # An old name at the start of a longer run, read as its start ("&notit;" as "¬it;").
    | st.tuples(st.sampled_from(_OLD_NAMES), st.text("aeimnotuxyAZ09;", max_size=6)).map(
        lambda parts: "&" + "".join(parts)
    )
    # A run of letters and digits, about as long as the longest run read, ``;`` or not.
    | st.from_regex(r"&[A-Za-z][A-Za-z0-9]{0,33};?", fullmatch=True)
    | st.integers(0, 1 << 22).map(lambda n: f"&#{n}")
    | st.integers(0, 1 << 24).map(lambda n: f"&#x{n:x}")
    | st.text("&#;xX0123456789abfAEmplgt \t\n<>", max_size=12)
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_REFERENCE_PARTS, min_size=1, max_size=40))
def test_html_entities_reads_as_the_standard_library_does(parts: list[str]) -> None:
    """Each reference read once, the others left as they are: what ``html.unescape`` of
    the whole text gives."""
    text = "".join(parts)
    read = esc.html_entities(text)
    if read is not None:
        assert read == html.unescape(esc._LONG_REFERENCE.sub(esc._short_reference, text))


def test_html_entities_reads_every_name_the_standard_library_knows() -> None:
    for first in range(0, len(_NAMES), 256):  # too few to be read whole
        text = " ".join(f"&{name} &{name}x" for name in _NAMES[first : first + 256])
        assert esc.html_entities(text) == html.unescape(text)


def test_html_entities_of_many_distinct_references_reads_them_all() -> None:
    text = "".join(f"&#{n};" for n in range(32, 3000))
    assert esc.html_entities(text) == html.unescape(text)


_LETTER_NAMES = sorted(letters._NAMES)
_SPELLED_PIECES = st.sampled_from(
    [*_LETTER_NAMES, "double u", "double-you", " ", "-", ",", "x", "é", "3", "_", "ab", "."]
)


@settings(max_examples=300, deadline=None)
@given(
    st.frozensets(st.sampled_from(_LETTER_NAMES), min_size=1, max_size=12),
    st.lists(_SPELLED_PIECES, max_size=60),
)
def test_runs_of_letter_names_start_where_a_word_does(
    names: frozenset[str], pieces: list[str]
) -> None:
    """The runs' pattern, which looks behind after a name's first letter, finds the runs
    that start at a word boundary (``\\b``)."""
    word = "|".join(["double[\\s\\-]?(?:u|you)", *sorted(names, key=lambda w: (-len(w), w))])
    bounded = re.compile(rf"\b(?:{word})(?:[\s,.;:/|\-]+(?:{word}))*(?![a-z])")
    text = "".join(pieces)
    found = [m.span() for m in letters._names_run(names).finditer(text)]
    assert found == [m.span() for m in bounded.finditer(text)]


def _escapes_by_pattern(text: str) -> str:
    pieces = esc._ESCAPE_SPLIT.split(text)
    pieces[1::2] = [esc._unescaped(escape) for escape in pieces[1::2]]
    return "".join(pieces)


#: Escapes of every kind, broken ones, doubled backslashes, characters outside ASCII.
_OTHER_ESCAPES = ("\\u0041", "\\101", "\\N{BULLET}", "\\U0001F600", "\\u{1F600}")
_BROKEN_ESCAPES = ("\\x4", "\\xg1", "\\", "\\\\", "x41", "\\q", "\\n")
_ESCAPE_PARTS = st.sampled_from(
    ["\\x41", "\\xff", "\\x0a", "a", " ", "é", "😀", *_BROKEN_ESCAPES, *_OTHER_ESCAPES]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_ESCAPE_PARTS, min_size=1, max_size=60))
def test_escapes_read_with_arrays_are_what_the_pattern_reads(parts: list[str]) -> None:
    text = "".join(parts)
    fast = esc._x_escapes(text)
    if fast is not None:
        assert fast == _escapes_by_pattern(text)
    # Only another kind of escape sends a text back to the pattern.
    assert (fast is None) == any(part in parts for part in _OTHER_ESCAPES)


def test_a_long_text_of_hex_escapes_is_read_whole() -> None:
    text = "say \\x43\\x49\\x54 " * 400 + "\\\\x41\\x4"
    assert len(text) > esc._LONG_TEXT
    assert esc.escapes(text) == _escapes_by_pattern(text)
    assert esc.escapes(text).startswith("say CIT say CIT")  # type: ignore[union-attr]


def test_rot47_of_hex_is_told_in_a_long_reply_and_its_lookalikes_are_not() -> None:
    hexed = CODE.encode().hex().translate(views._ROT47)
    prose = "and the invoice is due by Friday " * 100
    assert len(prose) > 2048  # the runs are found as arrays
    assert views.rot47(f"{prose}{hexed} {prose}") is not None
    # One long word of the same characters, a "z" after every fifteenth: no run holds it.
    broken = "z".join(hexed[at : at + 15] for at in range(0, len(hexed), 15))
    assert views.rot47(f"{prose}{broken} {prose}") is None


#: Numbers, the separators that join them, and what breaks a run.
_NUMBER_PARTS = st.sampled_from(
    ["1", "23", "456", "0", " ", ",", ";", "  ", "\t", "\x1c", "a", "-"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_NUMBER_PARTS, max_size=80))
def test_runs_of_numbers_found_with_arrays_are_what_the_pattern_finds(parts: list[str]) -> None:
    text = "".join(parts)
    expected = tuple(
        tuple(run.group().translate(esc._MARKS_AS_SPACES).split())
        for run in esc._NUMBER_RUN.finditer(text)
    )
    assert esc._number_runs_long(text) == expected


def test_a_long_reply_of_codes_is_read_in_its_runs() -> None:
    codes = " ".join(str(ord(c)) for c in CODE)
    text = f"{'12 a 3,4;5 ' * 600}x {codes}, x 1 2 3"
    assert len(text) > esc._LONG_TEXT
    assert esc.decimal_codes(text) == CODE


#: Words of the spelled views' vocabularies, and what may stand between or inside words.
_SPELLED_PARTS = st.sampled_from(
    ["one", "two", "Twenty", "alfa", "X", "x", "ray", "bee", "double", "u", "a", "I", "ex"]
) | st.text(" -,.\n\t3éß’İ", max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.lists(_SPELLED_PARTS, max_size=60), st.integers(0, 200))
@example(["one", " ", "one", " ", "two", "-", "ex", "-", "ray", "one"], 0)  # words in a row
@example(["tenfold", " ", "one"], 4)  # cut inside "tenfold", after "ten"
@example(["one"], 2)  # cut inside "one"
def test_the_words_of_a_vocabulary_in_a_text_are_those_its_split_gives(
    parts: list[str], shift: int
) -> None:
    """The words of a vocabulary in a text, and how many, found with one automaton, are
    those of the text split at every character but an ASCII letter, lower-cased; in a
    long text too, searched in two steps, wherever among its words the cut falls."""
    short = "".join(parts)
    filler = "q " * present.FIRST_CHARS
    long = filler[: present.FIRST_CHARS - shift] + short + " " + filler
    for text in (short, long):
        words = text.lower().encode("ascii", "replace").translate(spelled._NOT_LETTER).split()
        for vocabulary in (spelled._NUMBER_WORDS, spelled._NATO_WORDS, letters._NAME_BYTES):
            assert spelled.words_in(text, vocabulary) == vocabulary.intersection(words)
            assert spelled.count_in(text, vocabulary) == sum(w in vocabulary for w in words)


#: Escapes whole and cut short, marks in a row, hex digits of either case, text outside
#: ASCII: what percent-decoding reads, what it leaves, and the UTF-8 it may break.
_PERCENT_PARTS = st.sampled_from(
    ["%", "%%", "%4", "%41", "%e2", "%82", "%AC", "%ff", "%c3", "%zz", "4", "g", " ", "é", "+"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PERCENT_PARTS, min_size=1, max_size=60))
def test_percent_decoding_with_arrays_reads_as_the_standard_library_does(
    parts: list[str],
) -> None:
    text = "".join(parts)
    assert esc.unquoted(text) == urllib.parse.unquote(text, errors="replace")


def _morse_by_pattern(text: str) -> str | None:
    """The Morse view as the pattern alone reads it, on any text (with the view's check of
    its marks first)."""
    plain = text
    for look_alike, mark in spelled._DOTS:
        plain = plain.replace(look_alike, mark)
    if not any(marks in plain for marks in (".-", "-.", "...", "---")):
        return None
    written, count = spelled._MORSE_RUN.subn(spelled._morse_run, plain)
    return written if count else None


_MORSE_PARTS = st.sampled_from([".", "-", "...", "-.-", " ", "   ", "/", " / ", "|", "x", "·", "—"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_MORSE_PARTS, max_size=40), st.integers(0, 2))
@example(["-.-", " ", "...", " / ", "-"], 1)  # three letters: two marks before gaps
@example(["-.-", " ", "...", "x", "-", " ", "-"], 2)  # two apart, in two stretches
def test_morse_read_where_two_gaps_may_be_is_what_the_pattern_reads(
    parts: list[str], filler: int
) -> None:
    """A long text is searched for Morse only where a stretch of its characters holds two
    marks before gaps: that reads what the pattern reads everywhere."""
    text = "".join(parts)
    text = ("", "x" * 5000, ". x " * 1300)[filler] + text + "y" * (5000 if filler else 0)
    assert spelled.morse(text) == _morse_by_pattern(text)


_TAG_PARTS = st.sampled_from(
    ["<", ">", "<!--", "-->", "-", "--", "!", "a", "<b>", " ", "?", "/", "é"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_TAG_PARTS, max_size=40))
def test_tags_found_from_arrays_are_what_the_pattern_removes(parts: list[str]) -> None:
    """Comments' openings, tags and the arrows that close comments, found from where the
    ``<`` and ``>`` are: what the pattern removes, reading left to right."""
    text = "".join(parts)
    if text.isascii():
        assert tags._untagged(text) == tags._TAG.sub("", text)
    long = (text + " x ") * (5000 // (len(text) + 3) + 1)
    assert tags.html_tags(long) == (None if "<" not in long else _sub_or_none(long))


def _sub_or_none(text: str) -> str | None:
    stripped = tags._TAG.sub("", text)
    return stripped if stripped != text else None


_GROUPED_PARTS = st.sampled_from(
    ["a", "ab", "4c", "UVVJ", "ABCDEFGHI", ".", "|", ":", "~", " ", "-", "ab.cd.ef.gh", "a;b"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_GROUPED_PARTS, max_size=40), st.integers(0, 2))
def test_the_marks_runs_of_groups_start_at_are_those_the_pattern_finds(
    parts: list[str], filler: int
) -> None:
    """A long text of ASCII has the marks three groups follow found from its runs of
    group characters and its marks: the pattern's, with groups too long and too short."""
    text = ("", "x" * 5000, "." * 5000)[filler] + "".join(parts) * 3
    expected = [found.start() for found in judge_regrouped._RUN_MARK.finditer(text)]
    assert judge_regrouped._run_marks(text) == expected
