"""Many strings of digits decoded at once with numpy, in blocks of ``block`` digits.

The decoders of :mod:`palaestra.rules.judge.digits` hand their many pieces here: the
pieces' digits (already read through their table) are laid out in blocks, or read from
one pass over a token when they are spans of it, and every block is turned into its
bytes in a few array passes. Pure: no I/O.
"""

from __future__ import annotations

from typing import Final

import numpy as np

__all__ = ["groups_few", "groups_many", "groups_spans", "laid_out_bytes"]


def groups_many(pieces: list[str], digits: bytes, base: int, block: int, size: int) -> bytes:
    """Each piece decoded as a string of digits in ``base`` (``digits`` gives each
    character's value), ``block`` of them for ``size`` bytes, as the one-piece decoders
    read it; all at once with numpy: the pieces' bytes, zero bytes (never in a printable
    run) after each. Base 85 refuses a piece with a group past 2**32, and reads no byte
    from a last character alone; a refused piece (or one with a character not a digit)
    gives zeros.

    The pieces' digits are laid out in blocks, each piece from a block of its own and
    followed by a block of zeros; a short last block is padded (base 85 with its highest
    digit, as the standard library does; other bases with zero bits), and the bytes that
    padding makes are zeroed."""
    lengths = np.fromiter(map(len, pieces), dtype=np.int32, count=len(pieces))
    source = np.frombuffer(
        "".join(pieces).encode("ascii", "replace").translate(digits), dtype=np.uint8
    )
    return _groups(source, lengths, base, block, size)


def laid_out_bytes(length: int, block: int, size: int) -> int:
    """The bytes :func:`groups_many` gives a piece of ``length`` digits: its groups (a
    short last one padded), then one group of zeros."""
    return size * ((length + block - 1) // block + 1)


def groups_spans(
    source: np.ndarray, starts: np.ndarray, lengths: np.ndarray, base: int, block: int, size: int
) -> bytes:
    """:func:`groups_many` of pieces given as spans of ``source`` (digits already read, in bytes,
    through their table): piece ``k`` is ``source[starts[k] : starts[k] + lengths[k]]``.
    A token's pieces from every offset are spans of its one copy, not strings apart; when
    they are long (the pieces, laid out, longer than the source), their whole blocks are
    read from one pass over the source (:func:`_groups_windows`)."""
    if int(lengths.sum()) > _WINDOWS_FROM * len(source):
        return _groups_windows(source, starts, lengths, base, block, size)
    return _groups_laid_out(source, starts, lengths, base, block, size)


def _groups_laid_out(
    source: np.ndarray, starts: np.ndarray, lengths: np.ndarray, base: int, block: int, size: int
) -> bytes:
    """:func:`groups_spans`, each piece's digits laid out one after another first."""
    lengths = lengths.astype(np.int32)
    ends = np.cumsum(lengths, dtype=np.int32)
    gather = np.repeat(starts.astype(np.int32) - (ends - lengths), lengths)
    gather += np.arange(int(ends[-1]) if len(ends) else 0, dtype=np.int32)
    return _groups(source[gather], lengths, base, block, size)


#: Pieces this many times longer than their source are read by :func:`_groups_windows`
#: (a token from each offset is several times longer; pieces sparse in their source, as
#: the few tokens of a reply of prose, are laid out).
_WINDOWS_FROM: Final = 1


def _groups_windows(
    source: np.ndarray, starts: np.ndarray, lengths: np.ndarray, base: int, block: int, size: int
) -> bytes:
    """:func:`groups_spans`, the value of the block that starts at each place of
    ``source`` computed once (a block's worth of multiplications over the source, where
    laying the pieces out costs as many over every piece, and the moves besides).

    Every array is as narrow as its values allow (the values in 32 bits but for base 32's
    40, the places and counts in 32 bits: a reply is far shorter than 2**31 / block): each
    new page of memory costs the kernel as much as a pass of numpy over it."""
    count = len(lengths)
    if not count:
        return b""
    starts, lengths = starts.astype(np.int32), lengths.astype(np.int32)
    whole_groups = lengths // block
    short = lengths - whole_groups * block
    groups = whole_groups + (short > 0)
    # Each piece's groups, then one group of zeros between it and the next: slot ``s`` of
    # piece ``k`` is the block at ``starts[k] + (s - first_slot[k]) * block``. Every slot
    # is read so (those past the source, from its last block); then the zeros, and each
    # short last group, are put in their slots.
    slots = groups + 1
    first_slot = np.cumsum(slots, dtype=np.int32) - slots
    zeros = first_slot + groups
    windows, over = _windows(source, base, block)
    if len(windows):
        # Taken, places past the source read as its last block: in 64 bits, as ``take``
        # wants them (indexing reads each place through a general iterator, three times
        # the instructions).
        at = _slot_places(starts, first_slot, slots, block)
        values = windows.take(at, mode="clip")
        # Base 85 refuses a piece with a group past 2**32: its whole groups' blocks.
        over_slots = over.take(at, mode="clip") if over is not None else None
        del at
    else:
        values = np.zeros(int(zeros[-1]) + 1, windows.dtype)
        over_slots = None
    values[zeros] = 0
    refused = np.zeros(count, bool)
    partial = np.flatnonzero(short)
    if len(partial):
        # A short last group is padded (base 85 with its highest digit, others with zeros),
        # and keeps only the bytes its digits make; in base 85 a last character alone is
        # no byte.
        last = zeros[partial] - 1
        padded, past = _short_groups(
            source, starts[partial] + lengths[partial], short[partial], base, block
        )
        masks = _SHORT_MASKS[base, block, size][short[partial]]
        values[last] = (padded & masks).astype(values.dtype)
        if past is not None:
            refused[partial[past]] = True
        if over_slots is not None:
            over_slots[last] = False
    if over_slots is not None:
        over_slots[zeros] = False
        refused[np.searchsorted(first_slot, np.flatnonzero(over_slots), "right") - 1] = True
    invalid = source == 255
    if invalid.any():
        before = np.concatenate(([0], np.cumsum(invalid, dtype=np.int32)))
        refused |= before[starts + lengths] > before[starts]
    spoilt = np.flatnonzero(refused)
    if len(spoilt):  # each refused piece's slots, a value's bytes (not the row of them)
        values[_places_of(first_slot[spoilt], slots[spoilt])] = 0
    return _low_bytes(values, size).tobytes()


def _slot_places(
    starts: np.ndarray, first_slot: np.ndarray, slots: np.ndarray, block: int
) -> np.ndarray:
    """Where the block of each slot starts in the source: ``starts[k] + j * block`` for
    slot ``j`` of piece ``k``. A sum of steps, ``block`` each but at each piece's first
    slot, in one array (a repeat of the starts and a range beside it made two)."""
    steps = np.full(int(first_slot[-1] + slots[-1]), block, np.intp)
    ends = starts + (slots - 1) * block  # where each piece's last slot starts
    steps[first_slot[1:]] = starts[1:] - ends[:-1]
    steps[0] = starts[0]
    return np.cumsum(steps, out=steps)


def _windows(source: np.ndarray, base: int, block: int) -> tuple[np.ndarray, np.ndarray | None]:
    """The value of the block that starts at each place of ``source`` (where a whole one
    does), and for base 85, whether it is past 2**32: its value is then kept modulo 2**32.
    In 32 bits but for base 32 (40 bits a block): the value of base 85's last four digits
    is under 85**4, and its first digit says whether the block is past 2**32."""
    places = max(len(source) - block + 1, 0)
    wide = np.uint64 if base == 32 else np.uint32
    first = 1 if base == 85 else 0
    windows: np.ndarray = source[first : places + first].astype(wide)
    for column in range(first + 1, block):
        windows *= wide(base)
        windows += source[column : places + column]
    if base != 85:
        return windows, None
    lead = source[:places]
    over = (lead > _LEAD_MOST) | ((lead == _LEAD_MOST) & (windows > _REST_MOST))
    windows += lead * np.uint32(85**4)
    return windows, over


#: Base 85's largest first digit of a block within 2**32, and the largest value of the
#: other four after it.
_LEAD_MOST: Final = (1 << 32) // 85**4
_REST_MOST: Final = (1 << 32) - 1 - _LEAD_MOST * 85**4


def _places_of(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The places ``starts[k]`` to ``starts[k] + lengths[k]`` of every ``k``, in order (one
    ``k`` or more)."""
    ends = np.cumsum(lengths)
    places: np.ndarray = np.arange(int(ends[-1])) + np.repeat(starts - (ends - lengths), lengths)
    return places


def _short_groups(
    digits: np.ndarray, ends: np.ndarray, kept: np.ndarray, base: int, block: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """The value of each short last group: its ``kept`` digits, the last before ``ends``,
    padded (base 85 with its highest digit, others with zeros; in base 85 a last
    character alone is no byte, and reads as a zero); and for base 85, whether it is past
    2**32. Read a column of digits at a time, from the last: the blocks' values over the
    source are kept modulo 2**32 in base 85, and say nothing of their last digits."""
    powers, pads = _POWERS_AND_PADS[base, block]
    wide = np.uint64 if base == 32 else np.uint32  # under base ** (block - 1)
    own: np.ndarray = np.zeros(len(kept), wide)
    for back in range(1, block):
        digit: np.ndarray = digits.take(ends - back, mode="clip").astype(wide)
        digit[kept < back] = 0
        digit *= wide(base ** (back - 1))
        own += digit
    if base == 85:
        own[kept == 1] = 0
    values: np.ndarray = own * powers[block - kept] + pads[kept]
    return values, values > 0xFFFFFFFF if base == 85 else None


def _powers_and_pads(base: int, block: int) -> tuple[np.ndarray, np.ndarray]:
    """The powers of ``base`` up to ``block``, and for each count of digits kept in a
    short group, the value of its padding (base 85's highest digit in every place after
    them, other bases' zeros): looked up per group, where powers of arrays cost more."""
    powers = np.array([base**n for n in range(block + 1)], np.uint64)
    padding = base - 1 if base == 85 else 0
    pads = np.array(
        [
            sum(padding * base ** (block - 1 - column) for column in range(max(kept, 1), block))
            for kept in range(block)
        ],
        np.uint64,
    )
    return powers, pads


def _low_bytes(values: np.ndarray, size: int) -> np.ndarray:
    """The low ``size`` bytes of each value, big-endian, one row per value: the columns of
    one cast to big-endian integers of four or eight bytes (a byte at a time, shifted and
    stacked, cost twice as much). Values of that width already are turned in place (a
    copy of a million of them cost as much as the rest of their decoding's last steps)."""
    if size == 1:
        return values.astype(np.uint8).reshape(-1, 1)
    width = 4 if size <= 4 else 8
    if values.dtype.itemsize == width and values.dtype.isnative:
        if np.little_endian:
            values.byteswap(inplace=True)
        rows = values.view(np.uint8).reshape(-1, width)
    else:
        rows = values.astype(f">u{width}").view(np.uint8).reshape(-1, width)
    return rows[:, width - size :] if size < width else rows


def _short_masks(base: int, block: int, size: int) -> np.ndarray:
    """For each count of digits in a last group, the mask of the bytes they make, of a
    group's ``size`` bytes (big-endian: the first, the highest)."""
    bits = base.bit_length() - 1
    masks = [(1 << 8 * size) - 1]
    for short in range(1, block):
        whole = short - 1 if base == 85 else short * bits // 8
        masks.append((1 << 8 * size) - (1 << 8 * (size - whole)))
    return np.array(masks, np.uint64)


_POWERS_AND_PADS: Final = {
    (base, block): _powers_and_pads(base, block)
    for base, block in ((16, 2), (32, 8), (64, 4), (85, 5))
}
_ALL_BYTES: Final = {size: (1 << 8 * size) - 1 for size in range(1, 8)}
_SHORT_MASKS: Final = {
    (base, block, size): _short_masks(base, block, size)
    for base, block, size in ((16, 2, 1), (32, 8, 5), (64, 4, 3), (85, 5, 4))
}


def _groups(source: np.ndarray, lengths: np.ndarray, base: int, block: int, size: int) -> bytes:
    """The pieces of :func:`groups_many`, their digits one after another in ``source``."""
    count = len(lengths)
    groups = (lengths + (block - 1)) // block
    first_group = np.cumsum(groups + 1, dtype=np.int32) - (groups + 1)
    # Each character's place: its own, moved by how far its piece's first block is.
    shift = np.repeat(block * first_group - (np.cumsum(lengths, dtype=np.int32) - lengths), lengths)
    shift += np.arange(len(source), dtype=np.int32)
    values = np.full((int(groups.sum()) + count) * block, base - 1 if base == 85 else 0, np.uint8)
    values[shift] = source
    table = values.reshape(-1, block)
    last = first_group + groups - 1
    if base == 85:
        # A last character alone is no byte, and its padding must not refuse the piece.
        table[last[lengths % block == 1], 0] = 0
    total = table[:, 0].astype(np.uint64)
    for column in range(1, block):
        total *= base
        total += table[:, column]
    total[first_group + groups] = 0  # the group of zeros after each piece
    refused = np.zeros(count, dtype=bool)
    if 255 in source:
        refused[np.searchsorted(np.cumsum(lengths), np.flatnonzero(source == 255), "right")] = True
    if base == 85:
        over = np.flatnonzero(total > 0xFFFFFFFF)
        refused[np.searchsorted(first_group, over, "right") - 1] = True
    # What each group keeps of its bytes, as a mask on its value: all of them; those a
    # short last group makes; none in a refused piece. One pass over the values, where
    # zeroing the rows of bytes took one per kind of row.
    keep = np.full(len(total), np.uint64(_ALL_BYTES[size]))
    left = lengths % block
    short = np.flatnonzero(left)
    keep[last[short]] = _SHORT_MASKS[base, block, size][left[short]]
    if refused.any():
        keep[np.repeat(refused, groups + 1)] = 0
    total &= keep
    out = _low_bytes(total, size)
    return out.tobytes()


def groups_few(pieces: list[str], digits: bytes, base: int, block: int, size: int) -> bytes:
    """:func:`groups_many` for a few long pieces, one at a time: laying the pieces out
    together costs more than a few calls when they are the same long token from each
    offset."""
    bits = base.bit_length() - 1
    out: list[bytes] = []
    token, token_digits = "", np.zeros(0, np.uint8)
    for piece in pieces:
        if len(piece) < len(token) and token.endswith(piece):
            # The same token from a later offset: its digits are read already (a token's
            # every offset read again cost more than its one decoding).
            values = token_digits[len(token) - len(piece) :]
        else:
            values = np.frombuffer(piece.encode("ascii", "replace").translate(digits), np.uint8)
            token, token_digits = piece, values
        if base == 85 and len(values) % block == 1:
            values = values[:-1]  # a last character alone is no byte
        if 255 in values:
            continue
        if base == 85 and (values[::block] > _LEAD_MOST).any():
            # A block whose first digit is past 2**32's is past it, whatever follows: a
            # long token from all but its own offset is refused at once (its every block
            # was read first, 4 of a view's 7 ms on random base 85).
            continue
        short = len(values) % block
        padded = np.full(-(-len(values) // block) * block, base - 1 if base == 85 else 0, np.uint8)
        padded[: len(values)] = values
        table = padded.reshape(-1, block)
        total = table[:, 0].astype(np.uint64)
        for column in range(1, block):
            total *= base
            total += table[:, column]
        if base == 85 and (total > 0xFFFFFFFF).any():
            continue
        raw = _low_bytes(total, size).tobytes()
        if short:
            whole = short - 1 if base == 85 else short * bits // 8
            raw = raw[: len(raw) - size + whole]
        out.append(raw)
    return b"\x00".join(out)
