"""A text read character by character through a table, over the whole text at once.

``str.translate`` looks up each character of a text outside ASCII in a dict, a call of
Python apiece for a table that finds readings on first sight: tens of milliseconds for a
long reply. A :class:`Translation` keeps each character's reading in arrays indexed by
code point (where it starts in one buffer of all readings, and how long it is), and reads
a text as arrays: the text's code points, each one's reading gathered from the buffer.
A character is read once, on first sight, by the function the translation was made with;
the result is what ``str.translate`` through that function's readings gives. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Final

import numpy as np
from numpy.typing import NDArray

__all__ = ["Translation", "code_points"]

_CODE_POINTS: Final = 0x110000
#: A text shorter than this is translated by ``str.translate``: arrays cost more to set up.
_SHORT: Final = 512
#: The readings kept for short texts, at most (a reply of many distinct characters must
#: not grow the table without bound).
_MAX_READINGS: Final = 65_536
#: Each text is encoded as UTF-32 to be read as code points; lone surrogates included.
_ERRORS: Final = "surrogatepass"


@lru_cache(maxsize=4)
def code_points(text: str) -> NDArray[np.uint32]:
    """``text``'s code points, read-only; kept for the last few texts, which several views
    of a reply read."""
    return np.frombuffer(text.encode("utf-32-le", _ERRORS), np.uint32)


class Translation:
    """``text.translate`` through ``read`` (each character's reading), for whole texts."""

    def __init__(self, read: Callable[[str], str]) -> None:
        self._read = read
        self._start = np.full(_CODE_POINTS, -1, np.int32)
        self._length = np.zeros(_CODE_POINTS, np.int16)  # a reading is a few characters
        self._buffer = np.zeros(0, np.uint32)
        self._readings = _Readings(read)

    def __call__(self, text: str) -> str:
        if len(text) < _SHORT:
            if len(self._readings) > _MAX_READINGS:
                self._readings.clear()
            return text.translate(self._readings)
        codes = code_points(text)
        starts = self._start[codes]
        unseen = starts < 0
        if unseen.any():
            self._learn(np.unique(codes[unseen]))
            starts = self._start[codes]
        lengths = self._length[codes]
        if (lengths == 1).all():
            read = self._buffer[starts]
        else:
            # Each reading's characters in turn: a reading of none (a character dropped)
            # or of several takes its place.
            ends = np.cumsum(lengths)
            step = np.arange(int(ends[-1])) - np.repeat(ends - lengths, lengths)
            read = self._buffer[np.repeat(starts, lengths) + step]
        if read.size and int(read.max()) < 0x80:
            return read.astype(np.uint8).tobytes().decode("ascii")
        return read.tobytes().decode("utf-32-le", _ERRORS)

    def _learn(self, codes: np.ndarray) -> None:
        readings = [self._read(chr(code)) for code in codes.tolist()]
        flat = "".join(readings).encode("utf-32-le", _ERRORS)
        lengths = np.fromiter(map(len, readings), np.int16, len(readings))
        self._start[codes] = len(self._buffer) + np.cumsum(lengths) - lengths
        self._length[codes] = lengths
        self._buffer = np.concatenate((self._buffer, np.frombuffer(flat, np.uint32)))


class _Readings(dict[int, str]):
    """Each character's reading, for ``str.translate``, found on first sight."""

    def __init__(self, read: Callable[[str], str]) -> None:
        super().__init__()
        self._read = read

    def __missing__(self, code: int) -> str:
        reading = self[code] = self._read(chr(code))
        return reading
