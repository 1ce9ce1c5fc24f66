"""Many tokens of one encoding cut into pieces at once, with numpy.

The decoding views (:mod:`palaestra.rules.judge.decoders`) read each token from every offset
within one block. A reply of random base 85 or base 64 holds thousands of short tokens, and
cutting each one in Python (its sign, its separators, its offsets) cost three times more
than decoding them. Here every token of ASCII with no space or control character in it is
tested for its sign, has its separators dropped and is cut from each offset all at once:
each piece is a span of one array of the tokens' characters, not a string of its own. The
other tokens are cut one by one, as before, and their pieces keep their place: the pieces
are decoded in the order the tokens came in. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Final

import numpy as np

from palaestra.rules.judge.classes import CHAR_CLASSES
from palaestra.rules.judge.digits import GROUPS
from palaestra.rules.judge.groups import groups_spans
from palaestra.rules.judge.runs import Tokens

__all__ = ["MANY_TOKENS", "Spec", "decoded_many"]

#: From this many tokens on, they are cut at once: below it, numpy's fixed costs weigh more.
MANY_TOKENS: Final = 32
#: Up to this many pieces, they are decoded as strings, one by one (``judge_digits``).
_FEW_PIECES: Final = 64
#: A token's pieces are ordered by ``token * _SLOTS + piece``: fewer than this many each.
_SLOTS: Final = 64


@dataclass(frozen=True, slots=True)
class Spec:
    """How an encoding's tokens are cut (as ``judge_decoders._pieces`` cuts one)."""

    #: The decoder of many pieces (a key of ``judge_digits.GROUPS``).
    decode: Callable[[list[str]], bytes]
    #: The bytes a token's separators are (every one the token drops).
    deleted: bytes
    #: Each byte's character class (``judge_classes.char_classes``).
    classes: bytes
    #: The token's signs of the encoding in its classes; ``None`` for base 85's own.
    signs: tuple[bytes, ...] | None
    #: A token holding one of these is cut one by one (hex's ``0x``).
    apart: bytes = b""
    #: A token starting with ``<~`` or ending with ``~>`` is cut one by one (Ascii85's
    #: markers, which base 85's cut drops).
    marked: bool = False


def _per_token(mask: np.ndarray, starts: np.ndarray) -> np.ndarray:
    return np.add.reduceat(mask, starts, dtype=np.int64)


def _signed(classes: np.ndarray, starts: np.ndarray, signs: tuple[bytes, ...]) -> np.ndarray:
    """Whether each token holds one of ``signs`` within itself (the tokens, ``starts`` of
    ``classes``, none of them empty): where a sign starts, found for every place at once
    (the signs of two classes from each pair of classes, looked up as one number), less
    those that run into the next token, or-ed over each token. (Each sign's places, and
    the token of each, cost a millisecond on the tens of thousands in random base 85.)"""
    size = len(classes)
    at = np.zeros(size, bool)
    pairs = [sign for sign in signs if len(sign) == 2]
    if pairs and size >= 2:
        pair = classes[:-1].astype(np.uint16) << 8
        pair |= classes[1:]
        at[:-1] = _pair_table(tuple(pairs))[pair]
    for sign in signs:
        if len(sign) == 2 or size < len(sign):
            continue
        hit = classes[: size - len(sign) + 1] == sign[0]
        for place, kind in enumerate(sign[1:], 1):
            hit &= classes[place : size - len(sign) + 1 + place] == kind
        # A longer sign that starts where a pair cannot is cleared below with the pairs'
        # places; its own last places before each token are cleared here.
        for back in range(2, len(sign)):
            runs_on = starts[1:] - back
            hit[runs_on[(runs_on >= 0) & (runs_on < len(hit))]] = False
        at[: len(hit)] |= hit
    at[starts[1:] - 1] = False  # a sign that starts at a token's last place runs on
    held: np.ndarray = np.logical_or.reduceat(at, starts)
    return held


@cache
def _pair_table(pairs: tuple[bytes, ...]) -> np.ndarray:
    """Whether each pair of classes (the first one's byte shifted left by eight) is one of
    ``pairs``."""
    table = np.zeros(1 << 16, bool)
    table[[first << 8 | second for first, second in pairs]] = True
    return table


def _base85_signed(encoded: bytes, starts: np.ndarray) -> np.ndarray:
    """``judge_decoders._base85_word`` of each token (``starts`` of ``encoded``, none
    empty): mixed cases with a mark or a digit, or two marks and a capital or a digit.
    Each character's class as a bit, the classes a token holds or-ed over it, its marks
    counted, and its pairs of a small letter before a capital: a few passes over bytes
    (the counts in one sum of 64-bit fields made an array eight times the text)."""
    kinds = np.frombuffer(encoded.translate(_CLASS_BITS), np.uint8)
    held = np.bitwise_or.reduceat(kinds, starts)
    marks = np.add.reduceat(kinds & _MARK, starts, dtype=np.int32)
    # A small letter before a capital, both in one token: a pair that starts at a token's
    # last character is none. (A token of one character, last, has none: its start is
    # read as the last pair's, which is none.)
    pairs = kinds[:-1] == _SMALL
    pairs &= kinds[1:] == _CAPITAL
    pairs[starts[1:] - 1] = False
    mixed = np.logical_or.reduceat(pairs, np.minimum(starts, len(pairs) - 1))
    marked = (held & (_MARK | _DIGIT)) != 0
    capital_or_digit = (held & (_CAPITAL | _DIGIT)) != 0
    signed: np.ndarray = (mixed & marked) | ((marks >= 2) & capital_or_digit)
    return signed


#: Each class of :data:`CHAR_CLASSES` as a bit, for :func:`_base85_signed` (spaces none).
_MARK, _DIGIT, _CAPITAL, _SMALL = 1, 2, 4, 8
_CLASS_BITS: Final = bytes(
    {ord("p"): _MARK, ord("d"): _DIGIT, ord("u"): _CAPITAL, ord("l"): _SMALL}.get(c, 0)
    for c in CHAR_CLASSES
)


def _short_tails(
    chars: np.ndarray, starts: np.ndarray, lengths: np.ndarray, block: int, spaced: bool
) -> np.ndarray:
    """Where each token's short last word begins (the space before it), -1 for a token
    without one: as ``judge_decoders._pieces`` finds it in a token without controls, a
    word of fewer than ``block`` characters, then spaces to the end, the space before it
    among the last ``2 * block`` characters."""
    tails = np.full(len(starts), -1, np.int64)
    if not spaced:
        return tails  # random base 85 or 64 has no space (``spaced``): no sum over it
    ends = starts + lengths
    spaces = chars == 0x20
    # Only a token with a space among its last 2 * block characters may have one.
    near = np.maximum(ends - 2 * block, starts)
    before = np.concatenate(([0], np.cumsum(spaces, dtype=np.int32)))
    some = np.flatnonzero(before[ends] > before[near])
    if not len(some):
        return tails
    ends_some, starts_some = ends[some], starts[some]
    # The last non-space character, then the space before the word it ends: looked for
    # within the last 2 * block + 1 characters (the word is shorter than block).
    width = 2 * block + 1
    at = ends_some[:, None] - 1 - np.arange(width)[None, :]
    inside = at >= starts_some[:, None]
    blank = np.where(inside, spaces[np.maximum(at, 0)], True)
    word_end = np.argmax(~blank, axis=1)  # characters from the end to the word's end
    has_word = (~blank).any(axis=1)
    after = np.arange(width)[None, :] >= word_end[:, None]
    space_at = np.argmax(blank & after, axis=1)  # the space before the word, from the end
    has_space = (blank & after & inside).any(axis=1)
    word = space_at - word_end
    tail = ends_some - 1 - space_at  # the space's place in chars
    ok = has_word & has_space & (word < block) & (tail - starts_some >= near[some] - starts_some)
    tails[some[ok]] = (tail - starts_some)[ok]
    return tails


def _offsets(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``counts[k]`` offsets for each span ``k``: which span, and which offset."""
    which = np.repeat(np.arange(len(counts)), counts)
    offset = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    return which, offset


def decoded_many(
    tokens: Sequence[str], spec: Spec, cut_one: Callable[[str], list[str]]
) -> bytes | None:
    """The bytes of every token's pieces, in order, as ``spec.decode`` of the pieces
    ``cut_one`` cuts from each token would give them; ``None`` when there are none.

    The temporaries are few and short-lived, and each is made by one pass (a translation
    of the tokens' bytes where it can): each new page of memory costs the kernel as much
    as a pass of numpy over it, and this made 10 MB of them on random base 85."""
    table, base, block, size = GROUPS[spec.decode]
    count = len(tokens)
    if isinstance(tokens, Tokens):  # runs of a text, read off it at once: none empty
        lengths = tokens.lengths
        if count == 0:
            return None
        encoded, ascii = tokens.joined(), tokens.text.isascii()
    else:
        lengths = np.fromiter(map(len, tokens), np.int64, count)
        if count == 0 or not lengths.all():
            return _one_by_one(tokens, range(count), spec, cut_one)
        joined = "".join(tokens)
        encoded, ascii = joined.encode("ascii", "replace"), joined.isascii()
    chars = np.frombuffer(encoded, np.uint8)
    starts = np.cumsum(lengths) - lengths
    # What the one-by-one cut does to a token of ASCII without controls: drop its
    # separators, test its sign, take it from each offset (and without dashes, and without
    # a short last word). Each byte's flags: whether it is odd (a control, past ASCII, or
    # one of the bytes cut apart), whether the cut drops it.
    flags = np.frombuffer(encoded.translate(_flag_table(spec)), np.uint8)
    flagged = bool(flags.any())  # random base 64 or 85 has none
    quick = lengths >= 2 * block
    if flagged:
        quick &= _per_token(flags & _ODD, starts) == 0
    tail = None
    if spec.marked:
        tail = _short_tails(chars, starts, lengths, block, b" " in encoded)
        ends, last = starts + lengths, len(chars) - 1
        opens = (chars[starts] == ord("<")) & (chars[np.minimum(starts + 1, last)] == ord("~"))
        closes = (chars[np.maximum(ends - 2, 0)] == ord("~")) & (chars[ends - 1] == ord(">"))
        # Base 85's cut drops a marker at the end of what comes before a short last word too.
        before = np.zeros(count, bool)
        cut = np.flatnonzero(tail >= 2)
        at = starts[cut] + tail[cut]
        before[cut] = (chars[at - 2] == ord("~")) & (chars[at - 1] == ord(">"))
        quick &= ~(opens | closes | before)
    if not ascii:
        quick &= np.fromiter((t.isascii() for t in tokens), bool, count)
    if np.count_nonzero(quick) < MANY_TOKENS:
        # Tokens of words joined across their spaces (prose, source code, JSON): the
        # passes over all of them would cost more than cutting the few one by one.
        return _one_by_one(tokens, range(count), spec, cut_one)
    if spec.signs is None:
        signed = _base85_signed(encoded, starts)
    else:
        signed = _signed(
            np.frombuffer(encoded.translate(spec.classes), np.uint8), starts, spec.signs
        )
    slow = np.flatnonzero(~quick & (lengths >= 2 * block))
    kept = _Kept(chars, flags if flagged else None, starts, lengths, quick & signed, block)
    fast = kept.tokens
    # Each token's pieces: from each offset, then without its dashes, then without its
    # short last word (of the fast tokens, as spans of their kept characters; of the
    # others, as the one-by-one cut cuts them). Each group's pieces are put in their places
    # among all of them, token by token.
    dashes, bare_chars = kept.without_dashes(encoded, spec)
    some = np.flatnonzero(dashes)
    bare_len = kept.length[some] - dashes[some]
    fast_tail = (
        _short_tails(chars, starts[fast], lengths[fast], block, b" " in encoded)
        if tail is None
        else tail[fast]
    )
    cut = np.flatnonzero(fast_tail >= 0)
    cut_start = kept.start[cut]
    cut_len = kept.before(starts[fast[cut]] + fast_tail[cut]) - cut_start
    extra = [cut_one(tokens[index]) for index in slow.tolist()]
    counts = np.zeros(count, np.int64)
    counts[fast] = block
    counts[fast[some]] += np.clip(bare_len - 1, 0, block)
    counts[fast[cut]] += np.clip(cut_len - 1, 0, block)
    counts[slow] = np.fromiter(map(len, extra), np.int64, len(extra))
    total = int(counts.sum())
    if total <= _FEW_PIECES:
        return _one_by_one(tokens, sorted({*fast.tolist(), *slow.tolist()}), spec, cut_one)
    first = np.cumsum(counts) - counts  # each token's first piece
    taken = first[fast]  # the pieces of each fast token placed so far
    extra_pieces = [piece for pieces in extra for piece in pieces]
    extra_len = np.fromiter(map(len, extra_pieces), np.int64, len(extra_pieces))
    sources = (kept.chars, bare_chars, _ascii("".join(extra_pieces)))
    source = np.concatenate(sources)
    bare_at, extra_at = len(sources[0]), len(sources[0]) + len(sources[1])
    at, length = np.empty(total, np.int32), np.empty(total, np.int32)
    groups = (
        (np.arange(len(fast)), kept.start, kept.length, np.full(len(fast), block)),
        (some, bare_at + np.cumsum(bare_len) - bare_len, bare_len, np.clip(bare_len - 1, 0, block)),
        (cut, cut_start, cut_len, np.clip(cut_len - 1, 0, block)),
    )
    for owner, piece_start, piece_len, pieces in groups:
        which, offset = _offsets(pieces)
        places = taken[owner][which] + offset
        at[places] = piece_start[which] + offset
        length[places] = piece_len[which] - offset
        taken[owner] += pieces
    which, offset = _offsets(counts[slow])
    places = first[slow][which] + offset
    at[places] = extra_at + np.cumsum(extra_len) - extra_len
    length[places] = extra_len
    digits = np.frombuffer(source.tobytes().translate(table), np.uint8)
    del source, kept, bare_chars
    return groups_spans(digits, at, length, base, block, size)


def _ascii(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("ascii", "replace"), np.uint8)


class _Kept:
    """The characters the cut keeps of the tokens taken at once (``chosen``, with at least
    two blocks of them kept): all of them, when no byte is dropped (``flags`` is ``None``),
    else those the cut keeps; where each chosen token's kept characters start, and how
    many."""

    def __init__(
        self,
        chars: np.ndarray,
        flags: np.ndarray | None,
        starts: np.ndarray,
        lengths: np.ndarray,
        chosen: np.ndarray,
        block: int,
    ) -> None:
        self._flags = flags
        self._counted: np.ndarray | None = None
        if flags is None or not (flags & _DROPPED).any():
            self.tokens = np.flatnonzero(chosen)
            self.chars, self.start, self.length = chars, starts[self.tokens], lengths[self.tokens]
            return
        keep = (flags & _DROPPED) == 0
        # How many characters are kept before each place: each token's count, and where
        # its kept characters start, read off one sum. (Sums of flags in 32 bits, here and
        # below: a reply is far shorter than 2**31, and a sum in 64 bits took three times
        # longer.)
        self._counted = np.concatenate(([0], np.cumsum(keep, dtype=np.int32)))
        kept_count = self._counted[starts + lengths] - self._counted[starts]
        self.tokens = np.flatnonzero(chosen & (kept_count >= 2 * block))
        self.chars = chars[keep]
        self.start, self.length = self._counted[starts[self.tokens]], kept_count[self.tokens]

    def before(self, places: np.ndarray) -> np.ndarray:
        """How many characters are kept before each of ``places`` (of the tokens' chars)."""
        return places if self._counted is None else self._counted[places]

    def without_dashes(self, encoded: bytes, spec: Spec) -> tuple[np.ndarray, np.ndarray]:
        """The dashes (or ``_``) each chosen token keeps, and the kept characters of those
        with any, without them, one token after another: only those tokens' characters are
        copied (a copy of every token's was decoded from each place, for the few with a
        dash in random base 85), found from the places of the dashes (a sum over every
        character made three arrays as long as the tokens)."""
        dashes = np.zeros(len(self.tokens), np.int64)
        if b"-" not in encoded and b"_" not in encoded:
            return dashes, self.chars[:0]
        kept_dashes = np.frombuffer(encoded.translate(_dash_table(spec)), np.bool_)
        places = self.before(np.flatnonzero(kept_dashes))
        owner = np.searchsorted(self.start, places, "right") - 1
        inside = owner >= 0
        inside[inside] = places[inside] < (self.start + self.length)[owner[inside]]
        dashes += np.bincount(owner[inside], minlength=len(self.tokens))
        some = np.flatnonzero(dashes)
        which, offset = _offsets(self.length[some])
        chars = self.chars[self.start[some][which] + offset]
        return dashes, chars[(chars != ord("-")) & (chars != ord("_"))]


@cache
def _dash_table(spec: Spec) -> bytes:
    """Each byte as 1 if it is a dash (or ``_``) the cut keeps, else 0."""
    return bytes(b in b"-_" and b not in spec.deleted for b in range(256))


#: Each byte's flags in :func:`decoded_many`: odd, dropped by the cut.
_ODD, _DROPPED = 1, 2


@cache
def _flag_table(spec: Spec) -> bytes:
    odd = {*range(0x20), *range(0x7F, 0x100), *spec.apart}
    return bytes(
        (_ODD if b in odd else 0) | (_DROPPED if b in spec.deleted else 0) for b in range(256)
    )


def _one_by_one(
    tokens: Sequence[str],
    which: range | list[int],
    spec: Spec,
    cut_one: Callable[[str], list[str]],
) -> bytes | None:
    pieces = [piece for index in which for piece in cut_one(tokens[index])]
    return spec.decode(pieces) if pieces else None
