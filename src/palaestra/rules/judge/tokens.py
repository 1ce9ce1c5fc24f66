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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import numpy as np

from palaestra.rules.judge.classes import CHAR_CLASSES
from palaestra.rules.judge.digits import GROUPS, b64_many
from palaestra.rules.judge.groups import groups_spans
from palaestra.rules.judge.words import URLSAFE

__all__ = ["MANY_TOKENS", "Spec", "decoded_many", "unicode_candidates", "unicode_pieces"]

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
    ``classes``, none of them empty)."""
    out = np.zeros(len(starts), bool)
    size = len(classes)
    token = _token_at(starts, size)
    each = {kind: classes == kind for kind in set(b"".join(signs))}
    for sign in signs:
        if size < len(sign):
            continue
        hit = each[sign[0]][: size - len(sign) + 1].copy()
        for at, kind in enumerate(sign[1:], 1):
            hit &= each[kind][at : size - len(sign) + 1 + at]
        places = np.flatnonzero(hit)
        places = places[token[places] == token[places + len(sign) - 1]]
        out[token[places]] = True
    return out


def _token_at(starts: np.ndarray, size: int) -> np.ndarray:
    """Each place's token, of tokens starting at ``starts`` (in order, none empty) in
    ``size`` places: the count of the tokens started by it, less one."""
    begun = np.zeros(size, np.int32)
    begun[starts] = 1
    token: np.ndarray = np.cumsum(begun, dtype=np.int32) - 1
    return token


def _base85_signed(classes: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``judge_decoders._base85_word`` of each token: mixed cases with a mark or a digit, or
    two marks and a capital or a digit."""
    if len(classes) < 1 << _FIELD:
        # The marks, digits and capitals of each token counted in one sum, a field each.
        counts = np.add.reduceat(_COUNTED[classes], starts)
        marks, digits = counts & _FIELD_MASK, counts >> _FIELD & _FIELD_MASK
        capitals = counts >> 2 * _FIELD
    else:
        marks = _per_token(classes == ord("p"), starts)
        digits = _per_token(classes == ord("d"), starts)
        capitals = _per_token(classes == ord("u"), starts)
    # A lower-case letter before a capital of the same token: the token of each such pair.
    pairs = np.flatnonzero((classes[:-1] == ord("l")) & (classes[1:] == ord("u")))
    token = _token_at(starts, len(classes))
    mixed = np.zeros(len(starts), bool)
    mixed[token[pairs][token[pairs] == token[pairs + 1]]] = True
    marked = (marks > 0) | (digits > 0)
    return (mixed & marked) | ((marks >= 2) & ((capitals > 0) | (digits > 0)))


#: The bits of each count in the sum of :func:`_base85_signed` (for tokens of a text
#: shorter than ``2 ** _FIELD``), and what each class adds to it.
_FIELD: Final = 21
_FIELD_MASK: Final = (1 << _FIELD) - 1
_COUNTED: Final = np.zeros(256, np.int64)
_COUNTED[[ord("p"), ord("d"), ord("u")]] = [1, 1 << _FIELD, 1 << 2 * _FIELD]


def _short_tails(
    chars: np.ndarray, starts: np.ndarray, lengths: np.ndarray, block: int
) -> np.ndarray:
    """Where each token's short last word begins (the space before it), -1 for a token
    without one: as ``judge_decoders._pieces`` finds it in a token without controls, a
    word of fewer than ``block`` characters, then spaces to the end, the space before it
    among the last ``2 * block`` characters."""
    tails = np.full(len(starts), -1, np.int64)
    ends = starts + lengths
    spaces = chars == 0x20
    if not spaces.any():
        return tails  # random base 85 or 64 has none: no sum over it
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
    tokens: list[str], spec: Spec, cut_one: Callable[[str], list[str]]
) -> bytes | None:
    """The bytes of every token's pieces, in order, as ``spec.decode`` of the pieces
    ``cut_one`` cuts from each token would give them; ``None`` when there are none."""
    table, base, block, size = GROUPS[spec.decode]
    count = len(tokens)
    lengths = np.fromiter(map(len, tokens), np.int64, count)
    if count == 0 or not lengths.all():
        return _one_by_one(tokens, range(count), spec, cut_one)
    joined = "".join(tokens)
    chars = np.frombuffer(joined.encode("ascii", "replace"), np.uint8)
    starts = np.cumsum(lengths) - lengths
    # What the one-by-one cut does to a token of ASCII without controls: drop its
    # separators, test its sign, take it from each offset (and without dashes, and without
    # a short last word).
    odd = (chars < 0x20) | (chars >= 0x7F)
    for byte in spec.apart:
        odd |= chars == byte
    quick = (_per_token(odd, starts) == 0) & (lengths >= 2 * block)
    tail = None
    if spec.marked:
        tail = _short_tails(chars, starts, lengths, block)
        ends, last = starts + lengths, len(chars) - 1
        opens = (chars[starts] == ord("<")) & (chars[np.minimum(starts + 1, last)] == ord("~"))
        closes = (chars[np.maximum(ends - 2, 0)] == ord("~")) & (chars[ends - 1] == ord(">"))
        # Base 85's cut drops a marker at the end of what comes before a short last word too.
        before = np.zeros(count, bool)
        cut = np.flatnonzero(tail >= 2)
        at = starts[cut] + tail[cut]
        before[cut] = (chars[at - 2] == ord("~")) & (chars[at - 1] == ord(">"))
        quick &= ~(opens | closes | before)
    if not joined.isascii():
        quick &= np.fromiter((t.isascii() for t in tokens), bool, count)
    if np.count_nonzero(quick) < MANY_TOKENS:
        # Tokens of words joined across their spaces (prose, source code, JSON): the
        # passes over all of them would cost more than cutting the few one by one.
        return _one_by_one(tokens, range(count), spec, cut_one)
    kept = np.ones(256, bool)
    kept[list(spec.deleted)] = False
    keep = kept[chars]
    classes = np.frombuffer(bytes(chars).translate(spec.classes), np.uint8)
    if spec.signs is None:
        signed = _base85_signed(classes, starts)
    else:
        signed = _signed(classes, starts, spec.signs)
    slow = np.flatnonzero(~quick & (lengths >= 2 * block))
    if keep.all():  # nothing to drop (random base 64 or 85 has no separator)
        fast = np.flatnonzero(quick & signed)
        kept_chars, kept_start, kept_len = chars, starts[fast], lengths[fast]
        kept_before = np.arange(len(chars) + 1, dtype=np.int32)
    else:
        # How many characters are kept before each place: each token's count, and where
        # its kept characters start, read off one sum. (Sums of flags in 32 bits, here and
        # below: a reply is far shorter than 2**31, and a sum in 64 bits took three times
        # longer.)
        kept_before = np.concatenate(([0], np.cumsum(keep, dtype=np.int32)))
        kept_count = kept_before[starts + lengths] - kept_before[starts]
        fast = np.flatnonzero(quick & signed & (kept_count >= 2 * block))
        kept_chars, kept_start, kept_len = chars[keep], kept_before[starts[fast]], kept_count[fast]
    # The pieces of the fast tokens, as spans of their kept characters.
    which, offset = _offsets(np.full(len(fast), block))
    spans = [(kept_chars, kept_start[which] + offset, kept_len[which] - offset)]
    keys = [fast[which] * _SLOTS + offset]
    # A token with dashes (or ``_``) left is read again without them.
    dash = (kept_chars == ord("-")) | (kept_chars == ord("_"))
    if dash.any():
        before = np.concatenate(([0], np.cumsum(dash, dtype=np.int32)))
        dashes = before[kept_start + kept_len] - before[kept_start]
    else:
        dashes = np.zeros(len(fast), np.int32)
    some = np.flatnonzero(dashes)
    bare_len = kept_len[some] - dashes[some]
    # Only those tokens' characters are copied without their dashes (a copy of every
    # token's was decoded from each place, for the few with a dash in random base 85).
    edges = np.zeros(len(kept_chars) + 1, np.int32)
    edges[kept_start[some]] += 1
    edges[kept_start[some] + kept_len[some]] -= 1
    bare_chars = kept_chars[(np.cumsum(edges[:-1], dtype=np.int32) > 0) & ~dash]
    bare_start = np.cumsum(bare_len) - bare_len
    which, offset = _offsets(np.clip(bare_len - 1, 0, block))
    spans.append((bare_chars, bare_start[which] + offset, bare_len[which] - offset))
    keys.append(fast[some][which] * _SLOTS + block + offset)
    # A token with a short last word is read again without it: that word is looked for
    # in the fast tokens only (in every token for Ascii85's markers, which needed it).
    fast_tail = (
        _short_tails(chars, starts[fast], lengths[fast], block) if tail is None else tail[fast]
    )
    cut = np.flatnonzero(fast_tail >= 0)
    cut_start = kept_start[cut]
    cut_len = kept_before[starts[fast[cut]] + fast_tail[cut]] - cut_start
    which, offset = _offsets(np.clip(cut_len - 1, 0, block))
    # Spans of the same characters as the first pieces': one copy of them is read.
    spans[0] = (
        kept_chars,
        np.concatenate((spans[0][1], cut_start[which] + offset)),
        np.concatenate((spans[0][2], cut_len[which] - offset)),
    )
    keys[0] = np.concatenate((keys[0], fast[cut][which] * _SLOTS + 2 * block + offset))
    extra: list[str] = []
    extra_keys: list[int] = []
    for index in slow.tolist():
        pieces = cut_one(tokens[index])
        extra += pieces
        extra_keys += range(index * _SLOTS, index * _SLOTS + len(pieces))
    if sum(len(k) for k in keys) + len(extra) <= _FEW_PIECES:
        return _one_by_one(tokens, sorted({*fast.tolist(), *slow.tolist()}), spec, cut_one)
    if extra:
        lengths = np.fromiter(map(len, extra), np.int64, len(extra))
        source = np.frombuffer("".join(extra).encode("ascii", "replace"), np.uint8)
        spans.append((source, np.cumsum(lengths) - lengths, lengths))
        keys.append(np.array(extra_keys, np.int64))
    base_at = np.cumsum([0] + [len(source) for source, _, _ in spans[:-1]])
    source = np.concatenate([source for source, _, _ in spans])
    at = np.concatenate([first + span[1] for first, span in zip(base_at, spans, strict=True)])
    length = np.concatenate([span[2] for span in spans])
    order = np.argsort(np.concatenate(keys), kind="stable")
    digits = np.frombuffer(table, np.uint8)[source]
    return groups_spans(digits, at[order], length[order], base, block, size)


def _one_by_one(
    tokens: list[str], which: range | list[int], spec: Spec, cut_one: Callable[[str], list[str]]
) -> bytes | None:
    pieces = [piece for index in which for piece in cut_one(tokens[index])]
    return spec.decode(pieces) if pieces else None


#: The lead bytes of UTF-8 that may start a character ``judge_bytes`` reads as text
#: outside ASCII: U+0080 to U+027F, U+0340 to U+04FF, U+F000 to U+FFFF, U+10000 to U+3FFFF.
_READABLE_LEADS: Final = np.zeros(256, bool)
_READABLE_LEADS[[*range(0xC2, 0xCA), *range(0xCD, 0xD4), 0xEF, 0xF0]] = True


def unicode_candidates(pieces: list[str]) -> list[bool]:
    """Whether base 64 of each piece (its alphabet only, ``-`` and ``_`` read as ``+`` and
    ``/``) may read as text outside ASCII (``judge_bytes._unicode_readings``): a byte of
    0x80 or more with under one byte in eight that UTF-8 must replace (a continuation byte
    after an ASCII one, a lead byte with none after it, or a byte UTF-8 never holds: each
    reads as one U+FFFD), a quarter of zero bytes (UTF-16, UTF-32), or a byte order mark
    where that reading looks for one. All pieces at once: a call per piece cost 50 ms on
    random base 85. (A byte of 0xFE or 0xFF anywhere among the first eight, where only a
    mark counts, let one piece of random base 85 in fourteen through, and a lone lead byte
    was not counted: 1,063 of its 7,743 pieces were read, now 126, to readings that found
    nothing.)"""
    lengths = np.fromiter(map(len, pieces), np.int64, len(pieces))
    chars = np.frombuffer("".join(pieces).encode("ascii", "replace"), np.uint8)
    return _candidates(chars, np.cumsum(lengths) - lengths, lengths).tolist()  # type: ignore[no-any-return]


def unicode_pieces(tokens: list[str], signs: tuple[bytes, ...]) -> list[str]:
    """The pieces of base 64 tokens (of its alphabet, URL-safe or not) that
    ``judge_bytes.base64_unicode`` decodes: each token holding one of ``signs`` in its
    classes, whole when its length is a multiple of four, else from each of its first four
    offsets, the URL-safe digits read as the standard ones; only those
    :func:`unicode_candidates` lets through. Every token at once: a step of Python per
    token cost 4 ms on the thousands of random base 85."""
    if not tokens:
        return []
    lengths = np.fromiter(map(len, tokens), np.int64, len(tokens))
    joined = "".join(tokens).translate(URLSAFE)
    chars = np.frombuffer(joined.encode("ascii", "replace"), np.uint8)
    starts = np.cumsum(lengths) - lengths
    classes = np.frombuffer(joined.encode("ascii", "replace").translate(CHAR_CLASSES), np.uint8)
    signed = np.flatnonzero(_signed(classes, starts, signs))
    if not len(signed):
        return []
    which, offset = _offsets(np.where(lengths[signed] % 4 == 0, 1, 4))
    begins = starts[signed][which] + offset
    sizes = lengths[signed][which] - offset
    kept = np.flatnonzero(_candidates(chars, begins, sizes))
    bounds = zip(begins[kept].tolist(), (begins + sizes)[kept].tolist(), strict=True)
    return [joined[begin:end] for begin, end in bounds]


def _candidates(chars: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """:func:`unicode_candidates` of the pieces that are spans of ``chars``."""
    table, base, block, size = GROUPS[b64_many]
    pieces = len(lengths)
    count = lengths * 6 // 8  # the bytes of each piece
    groups = (lengths + (block - 1)) // block
    first = (np.cumsum(groups + 1) - (groups + 1)) * size
    digits = np.frombuffer(table, np.uint8)[chars]
    raw = np.frombuffer(groups_spans(digits, starts, lengths, base, block, size), np.uint8)
    at = np.cumsum(count) - count
    relative = np.arange(int(count.sum())) - np.repeat(at, count)
    data = raw[np.repeat(first, count) + relative]
    begins = relative == 0
    ascii_before = np.concatenate(([True], data[:-1] < 0x80)) | begins
    after = np.append(data[1:], 0)[: len(data)]  # the next byte, 0 past the last
    # Whether the next byte is a continuation byte of the same piece.
    continued = ((after & 0xC0) == 0x80) & ~np.append(begins[1:], True)[: len(data)]
    continuation = (data & 0xC0) == 0x80
    replaced = (continuation & ascii_before) | (data >= 0xF5) | (data == 0xC0) | (data == 0xC1)
    replaced |= (data >= 0xC2) & (data < 0xF5) & ~continued  # a lead byte left alone
    # A byte order mark: FF FE or FE FF first, or 00 00 FE FF within the first eight bytes.
    marks = begins & (((data == 0xFF) & (after == 0xFE)) | ((data == 0xFE) & (after == 0xFF)))
    utf32 = (data[:-3] == 0) & (data[1:-2] == 0) & (data[2:-1] == 0xFE) & (data[3:] == 0xFF)
    marks[: len(utf32)] |= utf32 & (relative[:-3] <= 4) & (relative[3:] == relative[:-3] + 3)
    some = np.flatnonzero(count)

    def per_piece(mask: np.ndarray) -> np.ndarray:
        sums = np.zeros(pieces, np.int64)
        if len(some):
            sums[some] = np.add.reduceat(mask, at[some], dtype=np.int64)
        return sums

    # A readable character outside ASCII in UTF-8 (U+00A0 to U+04FF, full-width forms,
    # mathematical letters) is a lead byte of these and a continuation byte after it.
    high = per_piece(_READABLE_LEADS[data] & continued) > 0
    candidate = (high & (8 * per_piece(replaced) < count)) | (4 * per_piece(data == 0) >= count)
    candidate |= per_piece(marks) > 0
    return candidate & (count > 0)
