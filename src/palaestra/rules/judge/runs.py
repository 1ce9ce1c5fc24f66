"""The runs of a class of characters in a long text, found as arrays, and the runs of
printable text in decoded bytes.

The decoding views cut a reply into tokens with patterns of one form, a class of
characters repeated (``[A-Za-z0-9+/]{12,}``): every run of the class at least that long,
whole. A pattern tries each character of a reply in turn, and in a reply of random base 85
(runs of the class a few characters long, one after another) that cost milliseconds per
pattern. Here the class is looked up for every character at once, and the runs are where
it starts and stops. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import Final, overload

import numpy as np

from palaestra.rules.judge.translate import code_points

__all__ = ["MIN_RUN", "ClassRuns", "Tokens", "long_runs", "printable_runs", "true_runs"]

#: Decoded runs of printable text shorter than this are noise, not a message.
MIN_RUN: Final = 4
_PRINTABLE_RUN: Final = re.compile(rb"[\x20-\x7e]{%d,}" % MIN_RUN)

#: Up to this many characters, the pattern itself finds the runs: arrays cost more to set up.
_SHORT: Final = 2048
#: The class of a character past the Basic Multilingual Plane is that of U+FFFF, which no
#: class here holds.
_LAST: Final = 0xFFFF
_FORM: Final = re.compile(r"(\[.*\])\{(\d+),\}")


class ClassRuns:
    """What ``pattern.findall`` finds, for a ``pattern`` of the form ``[class]{least,}``:
    each whole run of the class at least ``least`` characters long, in order."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        form = _FORM.fullmatch(pattern.pattern)
        if form is None:
            raise ValueError(f"not a run of a class of characters: {pattern.pattern!r}")
        self.pattern = pattern
        self._one = re.compile(form.group(1), pattern.flags)
        self._least = int(form.group(2))

    @cached_property
    def _table(self) -> np.ndarray:
        """Whether each character of the Basic Multilingual Plane is in the class."""
        every = "".join(map(chr, range(_LAST + 1)))
        table = np.zeros(_LAST + 1, bool)
        table[[ord(char) for char in self._one.findall(every)]] = True
        if table[_LAST]:
            raise ValueError("a class holding U+FFFF would hold every later character")
        return table

    @cached_property
    def _bytes(self) -> bytes:
        """Each ASCII character as the byte 1 if it is in the class, else 0."""
        return bytes(self._table[:128].astype(np.uint8)) + bytes(128)

    def findall(self, text: str) -> list[str]:
        if len(text) <= _SHORT:
            return self.pattern.findall(text)
        return self.tokens(text)[:]

    def tokens(self, text: str) -> Tokens:
        """:meth:`findall`'s runs, by where each starts and ends."""
        if len(text) <= _SHORT:
            spans = [found.span() for found in self.pattern.finditer(text)]
            bounds = np.array(spans, np.int64).reshape(-1, 2)
            return Tokens(text, bounds[:, 0], bounds[:, 1])
        if text.isascii():
            inside = np.frombuffer(text.encode("ascii").translate(self._bytes), np.bool_)
        else:
            inside = self._table[np.minimum(code_points(text), _LAST)]
        return Tokens(text, *long_runs(inside, self._least))


class Tokens(Sequence[str]):
    """Tokens of one text (whole runs, in order, none empty), by where each starts and
    ends: each is sliced out of the text only when asked for, and all of them one after
    another are read off the text at once (:meth:`joined`). A decoding of random base 85's
    tens of thousands of tokens sliced each, joined them again and counted each one's
    length: 2 ms a view."""

    def __init__(self, text: str, starts: np.ndarray, ends: np.ndarray) -> None:
        self.text, self.starts, self.ends = text, starts, ends

    def __len__(self) -> int:
        return len(self.starts)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            bounds = zip(self.starts[index].tolist(), self.ends[index].tolist(), strict=True)
            return [self.text[start:end] for start, end in bounds]
        return self.text[int(self.starts[index]) : int(self.ends[index])]

    def __iter__(self) -> Iterator[str]:
        return iter(self[:])

    @property
    def lengths(self) -> np.ndarray:
        lengths: np.ndarray = self.ends - self.starts
        return lengths

    def joined(self) -> bytes:
        """``"".join(self).encode("ascii", "replace")``: the text's characters between
        the tokens left out (in ASCII each character is one byte, ``?`` outside it)."""
        chars = np.frombuffer(self.text.encode("ascii", "replace"), np.uint8)
        # Between the tokens and each token, in turn: a repeat of left out and kept.
        runs = np.empty(2 * len(self) + 1, np.int64)
        runs[0::2] = np.append(self.starts, len(chars)) - np.insert(self.ends, 0, 0)
        runs[1::2] = self.lengths
        kept = np.repeat(np.arange(len(runs)) % 2 == 1, runs)
        joined: bytes = np.compress(kept, chars).tobytes()
        return joined


def true_runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each run of true places of ``mask`` starts, and where it ends (the place after
    its last): the places where the mask changes, which alternate between the two, and a
    run at either end of the mask starts or ends there. One comparison and one search over
    the mask, where its steps up and down were two searches of a copy with a 0 before and
    after it, a copy of that and a difference (0.6 to 0.26 ms at 256 KiB)."""
    changes = np.flatnonzero(mask[1:] != mask[:-1])
    changes += 1
    first = bool(len(mask) and mask[0])  # a run starts at 0: the first change ends it
    last = bool(len(mask) and mask[-1])  # a run ends at the end
    count = (len(changes) + first + last) // 2
    starts, ends = np.empty(count, changes.dtype), np.empty(count, changes.dtype)
    starts[first:] = changes[first::2]
    ends[: count - last] = changes[1 - first :: 2]
    if first:
        starts[0] = 0
    if last:
        ends[-1] = len(mask)
    return starts, ends


def long_runs(mask: np.ndarray, least: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`true_runs` of ``mask`` at least ``least`` places long: the runs of the places
    where ``least`` true places in a row start, each ``least - 1`` places short of its
    run's end. Those places are found in passes that double the width read, and are few
    where the runs are short (all the runs of a class in random base 85, tens of
    thousands, cut and measured, cost twice as much)."""
    if len(mask) < least:
        return true_runs(mask[:0])
    # all_of[k]: whether k places in a row, from each place on, are true.
    all_of = {1: mask}
    width = 1
    while 2 * width <= least:
        half = all_of[width]
        all_of[2 * width] = half[:-width] & half[width:]
        width *= 2
    held, width = all_of[width], width
    for part in sorted(all_of, reverse=True):
        if width + part <= least:
            held = held[: len(held) - part] & all_of[part][width : width + len(held) - part]
            width += part
    starts, ends = true_runs(held)
    ends += least - 1
    return starts, ends


#: Past this many bytes, the runs are found with numpy: a pattern tried at every byte of
#: a long decoding (random bytes have a short run every few dozen) cost three times more.
_MANY_BYTES: Final = 4096


def printable_runs(raw: bytes) -> str | None:
    """The runs of printable ASCII in ``raw``, one per line; ``None`` if there are none."""
    if len(raw) <= _MANY_BYTES:
        runs = _PRINTABLE_RUN.findall(raw)
        return b"\n".join(runs).decode() if runs else None
    data = np.frombuffer(raw, np.uint8)
    printable = (data - np.uint8(0x20)) < 0x5F  # 0x20 to 0x7e, wrapping below
    # Where MIN_RUN (four) printable bytes in a row start, then every byte such a window
    # covers: the bytes of the long runs, found in a few passes over bools, each doubling
    # the width read (finding each run's edges, then gathering each run, cost three times
    # more on random bytes; a pass per byte of the width, a third more).
    pairs = printable[:-1] & printable[1:]
    starts = pairs[:-2] & pairs[2:]  # len(data) - 3 places
    if not starts.any():
        return None
    # A byte is covered when a start lies zero to three places before it: a start at or
    # one before it, or so two places further back.
    near = np.zeros(len(data), bool)
    near[: len(starts)] = starts
    near[1 : len(starts) + 1] |= starts
    covered = near.copy()
    covered[2:] |= near[:-2]
    places = np.flatnonzero(covered)
    # A line break after each run but the last: where the places stop following on.
    breaks = np.flatnonzero(np.diff(places) != 1) + 1
    return np.insert(data[places], breaks, 0x0A).tobytes().decode()
