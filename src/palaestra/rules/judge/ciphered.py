"""A letter cipher over an encoding, read back: base64, base32 or hex whose letters were then
shifted (a Caesar shift) or mirrored (Atbash).

Such a token keeps its encoding's alphabet, or nearly (hex's letters move out of ``a-f``),
so the decodings read it as noise. Trying every cipher on every token would cost 26 times
a decoding; instead the cipher is read off the token. An encoding of printable text is
not any string of its alphabet: in base64 every fourth character is one of ``I-Z a-f``
(the top six bits of a byte from ``0x20`` to ``0x7e``) and the next one of 24 others;
in base32 every eighth is one of ``E-P``; in hex every other one is a digit from ``2`` to
``7``. A cipher moves letters to letters and leaves digits alone, so one regular
expression per encoding first rules out most tokens (in a reply of many tokens, the same
test on arrays of all their characters at once, and the masks below too); then, for each
cipher, a precomputed mask per character says whether the character, deciphered, is one
the encoding of text can have at that place, and the few distinct characters at those
places, and-ed, leave the ciphers that may fit; a cipher is kept if the token, deciphered
by it, decodes to printable text (usually one is, often none). Only those tokens,
deciphered by only those ciphers, are handed on to the decodings: the views here are
prefixes (``caesar-text → base64``). Tokens are words of twelve or more characters, and hex
written in pairs (``51 55 4C``, ``%51%55%4C``). Pure: no I/O.
"""

from __future__ import annotations

import binascii
import re
import string
from collections.abc import Callable
from functools import cache, lru_cache, reduce
from itertools import cycle
from operator import and_, getitem
from typing import Final

import numpy as np

from palaestra.rules.judge.cipher_tables import (
    _ALL,
    _ATBASH,
    _CAESARS,
    _ENCODINGS,
    _UNDO,
    _by_place,
    _Encoding,
    _foreign,
    _mask_table,
    _masks,
    _shape,
    _shape_bits,
)
from palaestra.rules.judge.classes import holds, long_words
from palaestra.rules.judge.hints import later
from palaestra.rules.judge.runs import ClassRuns

__all__ = ["atbash_text", "caesar_text", "fitting_ciphers"]


def fitting_ciphers(token: str, encoding: str) -> int:
    """The mask of ciphers (by index in :data:`~.cipher_tables.CIPHER_NAMES`) under which
    ``token``, read back, is ``encoding`` of printable text at some alignment (its whole
    blocks)."""
    (found,) = (p for p in _prepared() if p[0].name == encoding)
    return _fitting(token, *found)


_Masks = tuple[tuple[int, dict[str, int]], ...]
_Prepared = tuple[
    _Encoding, re.Pattern[str], _Masks, re.Pattern[str] | None, tuple[dict[str, int], ...]
]


@cache
def _prepared() -> tuple[_Prepared, ...]:
    """Each encoding with its shape, masks and foreign characters, made once (looked up
    per token, a cache keyed by the encoding hashed it each time)."""
    return tuple(
        (encoding, _shape(encoding), _masks(encoding), _foreign(encoding), _by_place(encoding))
        for encoding in _ENCODINGS
    )


#: Up to this many characters, a chunk's mask is and-ed character by character in C; a
#: longer one's place by place, each distinct character once.
_SHORT_CHUNK: Final = 64


def _fitting(
    token: str,
    encoding: _Encoding,
    shape: re.Pattern[str],
    masks: _Masks,
    foreign: re.Pattern[str] | None,
    by_place: tuple[dict[str, int], ...],
) -> int:
    fits, block = 0, encoding.block
    if foreign is not None and foreign.search(token, block - 1, len(token) - block + 1):
        return 0
    for offset in range(block):
        # Whole blocks only: a last, partial one ends in padding bits.
        end = offset + (len(token) - offset) // block * block
        if shape.fullmatch(token, offset, end):
            chunk = token[offset:end]
            fits |= _verified(chunk, encoding, _chunk_mask(chunk, masks, by_place, block))
    return fits


def _chunk_mask(chunk: str, masks: _Masks, by_place: tuple[dict[str, int], ...], block: int) -> int:
    """The ciphers the places of a chunk (whole blocks that :func:`_shape` lets through)
    leave: the and of every character's mask at its place."""
    if len(chunk) <= _SHORT_CHUNK:
        return reduce(and_, map(getitem, cycle(by_place), chunk), _ALL)
    # The shape let through characters of the tables only. The same and, either way.
    mask = _ALL
    for position, table in masks:
        for char in set(chunk[position::block]):
            mask &= table.get(char, 0)
        if not mask:
            break
    return mask


#: Past this many tokens, their chunks are read all at once (:func:`_chunk_masks`): a match
#: and an and per token and offset cost a step of Python each, 8 ms on a reply of random
#: base 85.
_MANY_TOKENS: Final = 64


def _chunk_masks(tokens: list[str], encoding: _Encoding) -> list[tuple[int, int, int, int]]:
    """Each chunk of whole blocks, from each offset within one block, of each token at least
    two blocks long, that ``_shape(encoding).fullmatch`` lets through and whose places
    leave a cipher (:func:`_chunk_mask`), as (token, start, end, mask), in order. Every
    character's fit is looked up at once (:func:`_shape_bits`) and and-ed over each chunk;
    then, for the chunks that fit, every character's mask (:func:`_mask_table`)."""
    block = encoding.block
    lengths = np.fromiter(map(len, tokens), np.int64, len(tokens))
    long = np.flatnonzero(lengths >= 2 * block)
    if not len(long):
        return []
    chars = np.frombuffer("".join(tokens).encode("ascii", "replace"), np.uint8)
    starts = np.cumsum(lengths) - lengths
    place = np.arange(len(chars)) - np.repeat(starts, lengths)
    bits = np.append(_shape_bits(encoding)[place % block, chars], 0)  # 0: past the last
    offsets = np.arange(block)
    begin = starts[long, None] + offsets
    end = begin + (lengths[long, None] - offsets) // block * block
    # And-ed over each chunk: its begin and end interleaved, each chunk's and at its begin
    # (what reduceat gives from an end to the next begin is not read).
    anded = np.bitwise_and.reduceat(bits, np.stack((begin, end), -1).ravel())[::2]
    which, offset = np.nonzero((anded.reshape(begin.shape) >> offsets) & 1)
    if not len(which):
        return []
    low, high = begin[which, offset], end[which, offset]
    # The fitting chunks' characters laid out one after another, each with its place.
    sizes = high - low
    firsts = np.cumsum(sizes) - sizes
    at = np.arange(int(sizes.sum())) + np.repeat(low - firsts, sizes)
    within = (at - np.repeat(low, sizes)) % block
    masks = np.bitwise_and.reduceat(_mask_table(encoding)[within, chars[at]], firsts)
    kept = np.flatnonzero(masks)
    token = long[which[kept]]
    return list(
        zip(
            token.tolist(),
            (low[kept] - starts[token]).tolist(),
            (high[kept] - starts[token]).tolist(),
            masks[kept].tolist(),
            strict=True,
        )
    )


_TEXT: Final = re.compile(rb"[\x20-\x7e]+")


def _verified(chunk: str, encoding: _Encoding, mask: int) -> int:
    """The ciphers of ``mask`` under which ``chunk``, read back and decoded, is printable
    text: the places of a block say which ciphers may fit, a decoding which do."""
    kept, index = 0, 0
    while mask >> index:
        if mask >> index & 1:
            try:
                raw = encoding.decode(chunk.translate(_UNDO[index]))
            except (binascii.Error, ValueError):
                raw = b""
            if _TEXT.fullmatch(raw):
                kept |= 1 << index
        index += 1
    return kept


#: A token: twelve or more characters of the encodings' alphabets.
_TOKEN: Final = re.compile(r"[A-Za-z0-9+/]{12,}")
_TOKEN_RUNS: Final = ClassRuns(_TOKEN)
#: Adjacent character classes (``judge_classes.char_classes``) that mark an encoded word:
#: a letter beside a digit, a small letter beside a capital, or eight capitals (base32).
_MIXED: Final = (b"ld", b"dl", b"ud", b"du", b"lu", b"ul", b"uuuuuuuu")


#: Hex in pairs, each perhaps after a ``%`` or before a separator (``51 55 4c``,
#: ``%51%55%4C``): eight or more, the first digit of each from ``2`` to ``7`` as in text.
#: The pattern starts with a set of characters, which the search skips to in C; an
#: optional first ``%`` would have it tried at every character of a reply.
_PAIRS: Final = re.compile(
    r"[%2-7](?:(?<=%)[2-7])?(?<=[2-7])[0-9A-Za-z][ :,\-]?(?:%?[2-7][0-9A-Za-z][ :,\-]?){7,}"
)
_PAIR_MARKS: Final = re.compile(r"[% :,\-]")


#: Each byte's kinds for :func:`_marked_pairs`, as bits.
_LEAD, _ALNUM, _SEP, _PERCENT = 1, 2, 4, 8
_PAIR_KINDS: Final = np.array(
    [
        (_LEAD if chr(c) in "234567" else 0)
        | (_ALNUM if chr(c) in string.ascii_letters + string.digits else 0)
        | (_SEP if chr(c) in " :,-" else 0)
        | (_PERCENT if chr(c) == "%" else 0)
        for c in range(256)
    ],
    np.uint8,
)
#: A run of :data:`_PAIRS` is this many pairs or more.
_LEAST_PAIRS: Final = 8


def _marked_pairs(text: str) -> bool:
    """Whether ``text`` may hold a run of :data:`_PAIRS` with a mark in it (one without
    adds no token). Such a run is eight pairs or more, each a digit from ``2`` to ``7``
    (its lead) and a letter or digit, the next lead two places on, or three after a
    separator or ``%``, or four after a separator and ``%``; its mark is a ``%`` before its
    first lead, one between two pairs, or a separator after its last pair, so eight of its
    pairs in a row hold one. The chains of leads are followed on all places at once, seven
    steps, one or two in most replies (a search tried each lead a reply holds, for
    milliseconds). Non-ASCII characters, read as ``?``, are none of these kinds."""
    kinds = _PAIR_KINDS[np.frombuffer(text.encode("ascii", "replace"), np.uint8)]
    sep, percent = (kinds & _SEP) != 0, (kinds & _PERCENT) != 0
    pair = (kinds & _LEAD) != 0
    pair[:-1] &= (kinds[1:] & _ALNUM) != 0
    pair[-1:] = False
    after_one = later(sep | percent, 1)  # a lead three places after the one before
    after_two = later(sep, 2) & later(percent, 1)  # four places after
    chain, marked = pair, pair & later(percent, 1)
    for _ in range(_LEAST_PAIRS - 1):
        across = after_one & later(chain, 3) | after_two & later(chain, 4)
        chain, marked = pair & (later(chain, 2) | across), pair & (later(marked, 2) | across)
        if not chain.any():
            return False
    return bool(marked.any() or (chain & later(sep, -2)).any())


def _tokens(text: str) -> list[str]:
    """The tokens worth reading: words of twelve or more characters, when a long word
    mixes classes, and hex written in pairs."""
    tokens = []
    # A sign in a long word is one in the classes of the whole text (the signs hold no
    # ``s``, which ends a word): without one there, the words are not cut out.
    if holds(text, *_MIXED):
        words = b"s".join(long_words(text, 12))  # s: a space, so no sign spans two words
        if any(sign in words for sign in _MIXED):
            tokens = _TOKEN_RUNS.findall(text)
    # A run of pairs is kept only with a letter in it, which stands right after its lead
    # digit: a text with no letter after a digit (a reply of decimal codes) has none.
    if holds(text, b"dl", b"du") and _marked_pairs(text):
        for pairs in _PAIRS.findall(text):
            joined = _PAIR_MARKS.sub("", pairs)
            # A token written whole is read above; one of digits only, no cipher changes.
            if joined != pairs and not joined.isdigit():
                tokens.append(joined)
    return tokens


@lru_cache(maxsize=4)
def _fits(text: str) -> tuple[tuple[str, int], ...]:
    """Each token of ``text`` with the mask of the ciphers it fits under, in order, each
    once (a token said again reads the same lines); found once for both views."""
    tokens = list(dict.fromkeys(_tokens(text)))
    if len(tokens) < _MANY_TOKENS:
        fits = [_token_fits(token) for token in tokens]
    else:
        fits = [0] * len(tokens)
        for encoding, *_ in _prepared():
            for index, start, end, mask in _chunk_masks(tokens, encoding):
                fits[index] |= _verified(tokens[index][start:end], encoding, mask)
    return tuple((token, fit) for token, fit in zip(tokens, fits, strict=True) if fit)


def _token_fits(token: str) -> int:
    fits = 0
    for encoding, shape, masks, foreign, by_place in _prepared():
        if len(token) >= 2 * encoding.block:
            fits |= _fitting(token, encoding, shape, masks, foreign, by_place)
    return fits


def _view(ciphers: int) -> Callable[[str], str | None]:
    def read(text: str) -> str | None:
        lines: dict[str, None] = {}
        for token, fits in _fits(text):
            fits &= ciphers
            index = 0
            while fits:
                if fits & 1:
                    lines.setdefault(token.translate(_UNDO[index]))
                fits >>= 1
                index += 1
        # A line of its own mark between readings: the decodings rejoin a token across
        # whitespace, and must not glue two readings into one.
        return "\n;\n".join(lines) if lines else None

    return read


caesar_text: Final = _view(_CAESARS)
caesar_text.__doc__ = (
    "Each token that reads as base64, base32 or hex of text once its letters are shifted "
    "back, so shifted back (one line per shift that fits)."
)
atbash_text: Final = _view(1 << _ATBASH)
atbash_text.__doc__ = "Each token that reads as base64, base32 or hex of text in Atbash, read back."
