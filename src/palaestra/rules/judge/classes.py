"""A text's character classes and its long words, which most views ask of every reply
before anything else (whether it holds a sign of their encoding at all): computed once a
text, kept for the last few. Pure: no I/O.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

import numpy as np

__all__ = ["CHAR_CLASSES", "char_classes", "classes_of", "holds", "long_words"]

CHAR_CLASSES: Final = bytes(
    ord("l")
    if chr(b).islower()
    else ord("u")
    if chr(b).isupper()
    else ord("d")
    if chr(b).isdigit()
    else ord("s")
    if chr(b).isspace()
    else ord("p")
    for b in range(256)
)


@lru_cache(maxsize=16)
def char_classes(text: str) -> bytes:
    """``text`` with each character replaced by its class: ``l`` lower-case, ``u`` upper-case,
    ``d`` digit, ``s`` space, ``p`` anything else. Searching this for a short literal
    (``b"ld"``: a letter then a digit) is how a view tells in microseconds that it has
    nothing to read; a regular expression over the reply takes tens of them. Kept for the
    last few texts: every view of a reply asks for the same one."""
    return classes_of(text)


def holds(text: str, *signs: bytes) -> bool:
    """Whether ``char_classes(text)`` holds one of ``signs`` (classes side by side,
    ``b"ld"``). In a long text each pair of a sign is first looked up among the text's
    pairs of classes (:func:`_class_pairs`, a byte each): a sign it lacks, most of them in
    prose, was a search of every character, up to half a millisecond at 256 KiB, and the
    views ask for a dozen signs of every text."""
    classes = char_classes(text)
    if len(classes) <= _SHORT:
        return any(sign in classes for sign in signs)
    pairs = _class_pairs(text)
    return any(
        all(_PAIR_BYTE[sign[at : at + 2]] in pairs for at in range(len(sign) - 1))
        and (len(sign) == 2 or sign in classes)
        for sign in signs
    )


@lru_cache(maxsize=16)
def _class_pairs(text: str) -> bytes:
    """Each pair of adjacent classes of ``text`` as one byte (five times the first's number
    plus the second's): a byte found with ``memchr``, where a pair was searched for."""
    codes = np.frombuffer(char_classes(text).translate(_CLASS_NUMBER), np.uint8)
    return (codes[:-1] * np.uint8(5) + codes[1:]).tobytes()


_CLASS_NUMBER: Final = bytes(b"dlpsu".find(bytes([b])) % 5 for b in range(256))
#: Each pair of classes, as :func:`_class_pairs` writes it.
_PAIR_BYTE: Final = {
    bytes((first, second)): bytes((5 * b"dlpsu".index(first) + b"dlpsu".index(second),))
    for first in b"dlpsu"
    for second in b"dlpsu"
}


def classes_of(token: str) -> bytes:
    """:func:`char_classes` of a token, uncached: the cache is for whole replies, which
    tokens would evict."""
    return token.encode("ascii", "replace").translate(CHAR_CLASSES)


@lru_cache(maxsize=16)
def long_words(text: str, length: int) -> tuple[bytes, ...]:
    """The classes (:func:`char_classes`) of the words of ``text`` at least ``length`` long:
    most replies have none. The views ask for words of ten and of twelve: the longer ones
    are read off the shorter. In a long text, the words are bounded from where its spaces
    are, and only the long ones cut: a split into every word cost 8 ms at 256 KiB."""
    if length > _LONG_WORD:
        return tuple(word for word in long_words(text, _LONG_WORD) if len(word) >= length)
    classes = char_classes(text)
    if len(classes) <= _SHORT:
        return tuple(word for word in classes.split(b"s") if len(word) >= length)
    spaces = np.flatnonzero(np.frombuffer(classes, np.uint8) == ord("s"))
    starts = np.concatenate(([0], spaces + 1))
    ends = np.append(spaces, len(classes))
    long = np.flatnonzero(ends - starts >= length)
    bounds = zip(starts[long].tolist(), ends[long].tolist(), strict=True)
    return tuple(classes[start:end] for start, end in bounds)


#: The shortest words the views ask :func:`long_words` for.
_LONG_WORD: Final = 10
#: Up to this many characters, a text's words are found by a split.
_SHORT: Final = 4096
