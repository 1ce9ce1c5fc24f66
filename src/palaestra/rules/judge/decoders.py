"""The judge's decoding views: text in an encoding, read back as the text it encodes.

Each view is a pure function from a reply (or an earlier view of it) to a new text, or
``None`` when the text holds nothing in its encoding: a cheap test comes first, so a reply
without, say, a ``%`` costs the percent view one search. Byte-stream decodings (base64,
base32, base85, hex) rejoin a token across the separators a defender puts inside it
(whitespace, quote markers and ``+`` between adjacent string literals, zero-width
characters, dashes, commas), decode it from every offset within one block, and keep only
the runs of printable text in the result: what a reader would see. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Final

import numpy as np

from palaestra.rules.judge.classes import CHAR_CLASSES, classes_of, holds, long_words
from palaestra.rules.judge.digits import (
    GROUPS,
    a85_many,
    b32_many,
    b64_many,
    hex_many,
    rfc1924_many,
)
from palaestra.rules.judge.groups import groups_many, laid_out_bytes
from palaestra.rules.judge.runs import ClassRuns, printable_runs
from palaestra.rules.judge.tokens import MANY_TOKENS, Spec, decoded_many

__all__ = [
    "ascii85",
    "ascii85_tokens",
    "base32",
    "base64_text",
    "base85",
    "hex_text",
    "views",
]

#: What may sit inside an encoded token without ending it.
_SEPARATORS: Final = "\\s\"'`+,\\-\u00ad\u200b-\u200f\u2060-\u2064\ufeff"
_B64_TOKEN: Final = re.compile(f"[A-Za-z0-9/_{_SEPARATORS}]{{8,}}")
_B32_TOKEN: Final = re.compile(f"[A-Za-z2-7{_SEPARATORS}]{{8,}}")
_HEX_TOKEN: Final = re.compile(f"(?:0[xX]|\\\\[xX]|[0-9A-Fa-f:{_SEPARATORS}]){{8,}}")
#: Every character a hex token may hold, in one class: a run of them without an ``x`` or a
#: backslash is a token as it is (the token's pattern, an alternation tried at every
#: character, read prose three times slower).
_HEX_WIDE: Final = re.compile(f"[0-9A-Fa-fxX\\\\:{_SEPARATORS}]{{8,}}")
#: :data:`_HEX_TOKEN` in a text without a ``0x`` or ``\\x``: its characters but ``x``,
#: ``X`` and the backslash, which then stand in no token.
_HEX_BARE: Final = re.compile(f"[0-9A-Fa-f:{_SEPARATORS}]{{8,}}")
_HEX_PREFIX: Final = re.compile(r"[0\\][xX]")
_HEX_SKIP: Final = re.compile(r"0[xX]|\\[xX]|[^0-9A-Fa-f]")
_ZERO_X: Final = re.compile(r"0[xX]")
#: An Ascii85 token: marked, or a run of ten or more of its characters. Its runs, and its
#: marked tokens where they are, are found apart (:func:`ascii85_tokens`).
_B85_TOKEN: Final = re.compile(r"<~[!-u\s]+~>|[!-u]{10,}")
_A85_RUN: Final = re.compile(r"[!-u]{10,}")
_RFC1924_TOKEN: Final = re.compile(r"[0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~]{10,}")
#: The tokens of each decoding, found as arrays in a long text (``judge.runs``).
_B64_RUNS, _B32_RUNS, _HEX_RUNS, _HEX_BARE_RUNS, _A85_RUNS, _RFC1924_RUNS = map(
    ClassRuns, (_B64_TOKEN, _B32_TOKEN, _HEX_WIDE, _HEX_BARE, _A85_RUN, _RFC1924_TOKEN)
)
_NOT_B64: Final = re.compile(r"[^A-Za-z0-9+/_\-]")
_NOT_B32: Final = re.compile(r"[^A-Za-z2-7]")


#: What an encoding looks like and prose does not, as adjacent character classes: base64
#: mixes case, or letters and digits, inside a word; base32 has digits beside capitals, or
#: eight capitals in a row; hex has digits beside letters, eight digits in a row, or four
#: pairs of them;
#: base85 see below. A text without its sign is not decoded.
_SIGNS: Final = {
    "base64": (b"lu", b"ld", b"dl", b"du", b"ud", b"uul"),
    "base32": (b"ud", b"du", b"ld", b"dl", b"uuuuuuuu"),
    "hex": (b"ld", b"dl", b"ud", b"du", b"dddddddd", b"ddsddsddsdd"),
}


def _base85_word(word: bytes) -> bool:
    """Whether a word's classes look like base 85: mixed cases with a mark or a digit, or
    two marks and a capital or a digit."""
    marked = b"p" in word or b"d" in word
    return (b"lu" in word and marked) or (word.count(b"p") >= 2 and (b"u" in word or b"d" in word))


def _base85_signed(text: str) -> bool:
    """A word of ten or more characters that looks like base 85."""
    return any(_base85_word(word) for word in long_words(text, 10))


def _base85_token(token: str) -> bool:
    return _base85_word(classes_of(token))


def _decoded_tokens(
    tokens: Sequence[str],
    drop: re.Pattern[str],
    block: int,
    decode: Callable[[list[str]], bytes],
    signed: Callable[[str], bool] | None = None,
) -> str | None:
    """The printable runs of each token decoded from every offset within one block: every
    decoding is gathered first and decoded at once (``decode``), then searched for runs in
    one pass (a call per token and offset cost more than the decoding itself)."""
    # A token said again is cut into the same pieces: each distinct one is cut once (a
    # reply of one short token repeated holds tens of thousands); many distinct ones are
    # cut at once.
    cut: dict[str, list[str]] = {}

    def cut_one(group: str) -> list[str]:
        known = cut.get(group)
        if known is None:
            known = cut[group] = _pieces(group, drop, block, signed)
        return known

    # More distinct tokens among the first ones than a few are enough to tell: a dict of
    # every token (tens of thousands in random base 85) cost a millisecond a view.
    distinct = dict.fromkeys(tokens[: 2 * _FEW_DISTINCT])
    if len(distinct) <= _FEW_DISTINCT:
        distinct = dict.fromkeys(tokens)
    if len(distinct) <= _FEW_DISTINCT and len(distinct) * _REPEATED < len(tokens):
        # Each distinct token decoded once: a printable run never spans two tokens (their
        # pieces' bytes lie apart), so the reading is each token's runs, token by token.
        runs = _runs_each(list(distinct), cut_one, decode)
        read = [found for token in tokens if (found := runs[token]) is not None]
        return "\n".join(read) if read else None
    if len(tokens) >= MANY_TOKENS and len(distinct) >= MANY_TOKENS:
        raw = decoded_many(tokens, _SPECS[decode], cut_one)
        return printable_runs(raw) if raw is not None else None
    pieces = [piece for group in tokens for piece in cut_one(group)]
    return printable_runs(decode(pieces)) if pieces else None


#: Tokens said again and again (each distinct one this many times on average, and at most
#: :data:`_FEW_DISTINCT` of them) are decoded once each.
_REPEATED: Final = 4
_FEW_DISTINCT: Final = 512


def _runs_each(
    tokens: list[str], cut_one: Callable[[str], list[str]], decode: Callable[[list[str]], bytes]
) -> dict[str, str | None]:
    """Each token's printable runs. Every token's pieces are decoded in one call and each
    token's bytes read off the result where :func:`groups_many` lays them out: a call per
    token cost a pass of numpy each (0.4 ms for a token of base 85, a hundred
    milliseconds over the few hundred distinct tokens of a reply)."""
    cuts = [cut_one(token) for token in tokens]
    table, base, block, size = GROUPS[decode]
    raw = groups_many([piece for cut in cuts for piece in cut], table, base, block, size)
    runs: dict[str, str | None] = {}
    at = 0
    for token, cut in zip(tokens, cuts, strict=True):
        end = at + sum(laid_out_bytes(len(piece), block, size) for piece in cut)
        runs[token] = printable_runs(raw[at:end]) if cut else None
        at = end
    return runs


def _pieces(
    group: str, drop: re.Pattern[str], block: int, signed: Callable[[str], bool] | None
) -> list[str]:
    """What one token is decoded as: from every offset within one block, and again without
    its dashes, or without a short last word."""
    if len(group) < 2 * block:
        return []  # what is dropped only makes it shorter
    if signed is not None and not signed(group):
        return []  # a long word of prose, not an encoded token
    chars = _dropped(group, drop)
    if len(chars) < 2 * block:
        return []
    pieces = _offsets(chars, block)
    if "-" in chars or "_" in chars:  # URL-safe characters, or dashes between groups
        pieces += _offsets(chars.replace("-", "").replace("_", ""), block)
    end = group[-2 * block :]
    if end.isprintable() and " " not in end:
        return pieces  # no space in its end: no short word after it
    tail = _SHORT_TAIL.search(group, max(0, len(group) - 2 * block))
    if tail is not None and len(tail.group().strip()) < block:
        # A short word after the token ("... ANRX gb") is rejoined to it, and its bits
        # would add a character to the end of what the token says: read it without.
        pieces += _offsets(_dropped(group[: tail.start()], drop), block)
    return pieces


_SHORT_TAIL: Final = re.compile(r"\s\S{1,7}\s*\Z")


def _dropped(group: str, drop: re.Pattern[str]) -> str:
    """``drop.sub("", group)``; where ``drop`` is a set of characters (and for hex, once
    its ``0x`` prefixes are gone; for base 85, when it is ASCII with no ``~``), one bytes
    translation instead: a pattern tried at each character of a long token cost more."""
    if (drop is _SPACE or drop is _NOT_B64) and group.isascii() and group.isalnum():
        return group  # letters and digits only: nothing to drop
    if drop is _SPACE and group.isprintable() and " " not in group and "~" not in group:
        return group
    if drop is _HEX_SKIP and ("x" in group or "X" in group):
        # A ``\\x`` is two characters that are not hex digits: only ``0x`` is more than
        # its characters, and it is found where a ``0`` is (the whole pattern, tried at
        # every character, cost 11 ms on a long token of escapes).
        group = _ZERO_X.sub("", group)
    if drop is _SPACE:
        if not group.isascii():
            return drop.sub("", group)
        # "<~" at the start and "~>" at the end, as the pattern finds them.
        start = 2 if group.startswith("<~") else 0
        end = len(group) - 2 if group.endswith("~>") and len(group) - 2 >= start else None
        group = group[start:end]
    deleted = _DELETED.get(drop)
    if deleted is None:
        return drop.sub("", group)
    return group.encode().translate(None, deleted).decode("ascii")


def _offsets(chars: str, block: int) -> list[str]:
    """``chars`` from every offset within one block (a last character alone is no byte)."""
    return [chars[offset:] for offset in range(min(block, max(len(chars) - 1, 0)))]


def _token_signed(signs: tuple[bytes, ...]) -> Callable[[str], bool]:
    """Whether a token bears one of ``signs`` itself: one that does not is prose joined
    across its spaces, even where another token of the text is encoded."""

    def signed(token: str) -> bool:
        classes = classes_of(token)
        return any(sign in classes for sign in signs)

    return signed


_TOKEN_SIGNED: Final = {name: _token_signed(signs) for name, signs in _SIGNS.items()}


def _hex_tokens(text: str) -> list[str]:
    """What ``_HEX_TOKEN`` finds in ``text``: the runs of :data:`_HEX_WIDE`, and in those
    with an ``x`` or a backslash, the tokens themselves; in a text with such runs but no
    prefix at all, the runs of :data:`_HEX_BARE` (one pass, where a reply of words with an
    ``x`` in them, ``VORTEX 7468``, had its short runs each searched again)."""
    runs = _HEX_RUNS.findall(text)
    if not any("x" in run or "X" in run or "\\" in run for run in runs):
        return runs
    if not _HEX_PREFIX.search(text):
        return _HEX_BARE_RUNS.findall(text)
    tokens: list[str] = []
    for run in runs:
        if "x" in run or "X" in run or "\\" in run:
            tokens += _HEX_TOKEN.findall(run) if len(run) <= _LONG_RUN else hex_run_tokens(run)
        else:
            tokens.append(run)
    return tokens


#: A run of hex's characters longer than this is cut into tokens by :func:`hex_run_tokens`.
_LONG_RUN: Final = 2048


def hex_run_tokens(run: str) -> list[str]:
    """``_HEX_TOKEN.findall(run)`` for a run of :data:`_HEX_WIDE`, with arrays: the
    pattern's alternation, tried at every character, cost 12 ms on a long run of escapes.

    In such a run only two characters stand in no token: an ``x`` after neither a ``0``
    nor a backslash, and a backslash before no ``x`` (every ``0`` and every backslash
    before an ``x`` begins a step of the pattern). The tokens are the stretches between
    them of eight steps or more, an ``x`` and what precedes it being one step."""
    # Not ``code_points``, whose cache is for whole replies: a run would push one out.
    raw = np.frombuffer(run.encode("utf-32-le", "surrogatepass"), np.uint32)
    ex = (raw == ord("x")) | (raw == ord("X"))
    slash = raw == ord("\\")
    after = np.zeros(len(raw), bool)
    after[1:] = (raw[:-1] == ord("0")) | slash[:-1]
    before = np.zeros(len(raw), bool)
    before[:-1] = ex[1:]
    stray = np.flatnonzero((ex & ~after) | (slash & ~before))
    starts = np.concatenate(([0], stray + 1))
    ends = np.concatenate((stray, [len(raw)]))
    exes = np.concatenate(([0], np.cumsum(ex)))
    steps = ends - starts - (exes[ends] - exes[starts])
    keep = np.flatnonzero(steps >= 8)
    return [
        run[start:end]
        for start, end in zip(starts[keep].tolist(), ends[keep].tolist(), strict=True)
    ]


def base64_text(text: str) -> str | None:
    """Base 64, standard and URL-safe alphabets, padding optional."""
    if not holds(text, *_SIGNS["base64"]):
        return None
    return _decoded_tokens(_B64_RUNS.tokens(text), _NOT_B64, 4, b64_many, _TOKEN_SIGNED["base64"])


def base32(text: str) -> str | None:
    """Base 32 (RFC 4648), either case, padding optional."""
    if not holds(text, *_SIGNS["base32"]):
        return None
    return _decoded_tokens(_B32_RUNS.tokens(text), _NOT_B32, 8, b32_many, _TOKEN_SIGNED["base32"])


def hex_text(text: str) -> str | None:
    """Hexadecimal bytes, with or without ``0x``/``\\x`` prefixes and separators."""
    if not holds(text, *_SIGNS["hex"]):
        return None
    return _decoded_tokens(_hex_tokens(text), _HEX_SKIP, 2, hex_many, _TOKEN_SIGNED["hex"])


_SPACE: Final = re.compile(r"\A<~|~>\Z|\s")


def _deleted_bytes(drop: str) -> bytes:
    """The bytes of UTF-8 that ``drop`` (a class of characters) deletes: those of every
    character outside ASCII, and the ASCII characters it matches."""
    pattern = re.compile(drop)
    return bytes(b for b in range(256) if b >= 128 or pattern.fullmatch(chr(b)))


#: Each drop pattern's deletion in bytes, as :func:`_dropped` uses it.
_DELETED: Final = {
    _NOT_B64: _deleted_bytes(_NOT_B64.pattern),
    _NOT_B32: _deleted_bytes(_NOT_B32.pattern),
    _HEX_SKIP: _deleted_bytes(r"[^0-9A-Fa-f]"),
    _SPACE: _deleted_bytes(r"\s"),
}


#: How each decoding's tokens are cut many at once (:mod:`palaestra.rules.judge.tokens`).
_SPECS: Final[dict[Callable[[list[str]], bytes], Spec]] = {
    b64_many: Spec(b64_many, _DELETED[_NOT_B64], CHAR_CLASSES, _SIGNS["base64"]),
    b32_many: Spec(b32_many, _DELETED[_NOT_B32], CHAR_CLASSES, _SIGNS["base32"]),
    hex_many: Spec(hex_many, _DELETED[_HEX_SKIP], CHAR_CLASSES, _SIGNS["hex"], apart=b"xX"),
    a85_many: Spec(a85_many, _DELETED[_SPACE], CHAR_CLASSES, None, marked=True),
    rfc1924_many: Spec(rfc1924_many, _DELETED[_SPACE], CHAR_CLASSES, None, marked=True),
}


def ascii85(text: str) -> str | None:
    """Ascii85 (Adobe's, ``<~ ~>`` optional)."""
    if not _base85_signed(text):
        return None
    return _decoded_tokens(ascii85_tokens(text), _SPACE, 5, a85_many, _base85_token)


def ascii85_tokens(text: str) -> Sequence[str]:
    """``_B85_TOKEN.findall(text)``: the runs of :data:`_A85_RUN`, found as arrays, but
    where an opening ``<~`` starts a token of its own (the pattern's alternation, tried at
    every character of random base 85, which holds a few ``<~``, cost 4 ms at 256 KiB).

    An opening is tried where the pattern tries it: unless a run of ten takes its ``<``
    (a run ends there, ``~`` being none of its characters), and from where the last token
    ended. The runs before a token are those of the text up to it: a run that ends at its
    ``<`` is shorter than ten, and no token. A text of many openings is left to the pattern:
    a step of Python per opening cost 76 ms at 256 KiB of them, the pattern 11."""
    if text.count("<~") > _MANY_OPENINGS:
        return _B85_TOKEN.findall(text)
    tokens: list[str] = []
    at = 0
    for opening in _OPENING.finditer(text):
        start = opening.start()
        if start < at or (start - 9 >= at and _TEN.fullmatch(text, start - 9, start + 1)):
            continue
        token = _A85_BLOCK.match(text, start)
        if token is not None:
            tokens += _A85_RUNS.findall(text[at:start])
            tokens.append(token.group())
            at = token.end()
    if not tokens:
        return _A85_RUNS.tokens(text)
    return tokens + _A85_RUNS.findall(text[at:])


_MANY_OPENINGS: Final = 64
_OPENING: Final = re.compile("<~")
_A85_BLOCK: Final = re.compile(r"<~[!-u\s]+~>")
_TEN: Final = re.compile(r"[!-u]{10}")


def base85(text: str) -> str | None:
    """Base 85 in RFC 1924's alphabet (Python's and git's ``b85``)."""
    if not _base85_signed(text):
        return None
    return _decoded_tokens(_RFC1924_RUNS.tokens(text), _SPACE, 5, rfc1924_many, _base85_token)


def views() -> Iterator[tuple[str, Callable[[str], str | None]]]:
    """Every decoding view, by name, in the order the judge tries them."""
    yield from (
        ("hex", hex_text),
        ("base64", base64_text),
        ("base32", base32),
        ("base85", base85),
        ("ascii85", ascii85),
    )
