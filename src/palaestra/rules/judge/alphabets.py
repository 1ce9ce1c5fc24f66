"""The judge's decodings of their own alphabets.

- ``base2048`` (qntm's Base2048: eleven bits a character, decoded by the ``base2048``
  package) and ``ecoji`` (Ecoji 1: ten bits an emoji, its alphabet from the ``ecoji``
  package): runs of their alphabets decoded; the printable runs of the result.
- ``uuencode``: ``uuencode`` lines (a length character, then four characters per three
  bytes), with or without ``begin``/``end``.

Pure: no I/O.
"""

from __future__ import annotations

import binascii
import re
from functools import cache
from typing import Final

import base2048 as _base2048
import ecoji as _ecoji

from palaestra.rules.judge.runs import printable_runs

__all__ = ["base2048", "ecoji", "uuencode"]


@cache
def _base2048_alphabet() -> frozenset[str]:
    """Base2048's 2,048 characters and its 8 tail characters, as the package encodes them:
    eleven bits ``k`` make the character ``k``."""
    chars = {_base2048.encode((k << 5).to_bytes(2, "big"))[0] for k in range(2048)}
    # A last character of two or three bits (after 3 or 10 bytes) is a tail character.
    chars |= {_base2048.encode(bytes(9) + bytes([bits]))[-1] for bits in range(8)}
    return frozenset(chars)


_MIN_BASE2048: Final = "8,"


@cache
def _base2048_run() -> re.Pattern[str]:
    """Runs of eight or more characters (eleven bytes: a secret is at least ten): a word of
    Greek or Russian prose is mostly shorter, and each one read would cost a decoding."""
    alphabet = "".join(sorted(_base2048_alphabet()))
    return re.compile(f"[{re.escape(alphabet)}]{{{_MIN_BASE2048}}}")


def base2048(text: str) -> str | None:
    """Runs of eight or more Base2048 characters, each decoded (a run that is not a whole
    encoding, as a word of Russian prose may be, decodes to noise or not at all)."""
    if text.isascii():
        return None
    runs: list[str] = []
    for run in dict.fromkeys(_base2048_run().findall(text)):
        for chars in (run, run[:-1]):  # a last character may be another run's tail
            try:
                raw = _base2048.decode(chars)
            except (_base2048.DecodeError, ValueError):
                continue
            if (printable := printable_runs(raw)) is not None:
                runs.append(printable)
            break
    return "\n".join(runs) if runs else None


@cache
def _ecoji_alphabet() -> frozenset[str]:
    paddings = (_ecoji.PADDING, _ecoji.PADDING40, _ecoji.PADDING41, _ecoji.PADDING42)
    return frozenset((*_ecoji.EMOJIS, *paddings, _ecoji.PADDING43))


@cache
def _ecoji_values() -> dict[str, int]:
    return {emoji: value for value, emoji in enumerate(_ecoji.EMOJIS)}


def _ecoji_decode(run: str) -> bytes:
    """Ecoji 1 decoded: four emoji (ten bits each) make five bytes; the padding emoji end
    the data early, and the last one of four (``PADDING40``-``43``) carries two bits.

    Written here rather than called: the package's ``decode`` reads the last two bits as
    zero after ``PADDING42`` (it decodes its own encoding of ``JUNIPER`` as ``JUNIPEP``).
    """
    values = _ecoji_values()
    last = {_ecoji.PADDING40: 0, _ecoji.PADDING41: 1, _ecoji.PADDING42: 2, _ecoji.PADDING43: 3}
    out = bytearray()
    for at in range(0, len(run) - len(run) % 4, 4):
        c0, c1, c2, c3 = run[at], run[at + 1], run[at + 2], run[at + 3]
        b0, b1, b2 = (values.get(c, 0) for c in (c0, c1, c2))
        b3 = last[c3] << 8 if c3 in last else values.get(c3, 0)
        group = (
            b0 >> 2,
            (b0 & 0x3) << 6 | b1 >> 4,
            (b1 & 0xF) << 4 | b2 >> 6,
            (b2 & 0x3F) << 2 | b3 >> 8,
            b3 & 0xFF,
        )
        pad = _ecoji.PADDING
        size = 1 if c1 == pad else 2 if c2 == pad else 3 if c3 == pad else 4 if c3 in last else 5
        out += bytes(group[:size])
    return bytes(out)


#: Runs of emoji-block characters (every Ecoji emoji is one code point in these blocks); a
#: class of the 1,029 emoji themselves would be tried one by one at every character.
_EMOJI_RUN: Final = re.compile("[\u2100-\u2bff\U0001f000-\U0001faff]{4,}")


def ecoji(text: str) -> str | None:
    """Runs of four or more Ecoji (version 1) emoji, each decoded."""
    if text.isascii():
        return None
    alphabet = _ecoji_alphabet()
    runs: list[str] = []
    for found in dict.fromkeys(_EMOJI_RUN.findall(text)):
        for run in _runs_of(found, alphabet):
            if (printable := printable_runs(_ecoji_decode(run))) is not None:
                runs.append(printable)
    return "\n".join(runs) if runs else None


def _runs_of(text: str, alphabet: frozenset[str]) -> list[str]:
    """The runs of four or more characters of ``alphabet`` in ``text``."""
    runs: list[str] = []
    start = 0
    for at, char in enumerate(text):
        if char not in alphabet:
            if at - start >= 4:
                runs.append(text[start:at])
            start = at + 1
    if len(text) - start >= 4:
        runs.append(text[start:])
    return runs


#: A uuencoded line: its length character (``!`` to ``M``, 1 to 45 bytes), then at least one
#: group of four characters from space to backtick. Looked for after a line break (a
#: literal the search skips to; the text is read with one put before it).
_UU_AFTER_BREAK: Final = re.compile(r"\n([!-M][ -`]{4,84})(?=\r?\n|\Z)")


def _uu_line(line: str) -> bytes | None:
    length = ord(line[0]) - 32
    if len(line) - 1 < (length + 2) // 3 * 4:
        return None
    try:
        return binascii.a2b_uu(line)
    except binascii.Error:
        return None


def uuencode(text: str) -> str | None:
    """``uuencode`` lines, those in a row decoded together; ``begin``/``end`` optional."""
    raw = bytearray()
    runs: list[str] = []
    last_end = -2
    for found in _UU_AFTER_BREAK.finditer("\n" + text):
        decoded = _uu_line(found.group(1))
        if decoded is None:
            continue
        if found.start(1) > last_end + 2 and raw:  # not the next line: another text
            runs += [r for r in [printable_runs(bytes(raw))] if r is not None]
            raw.clear()
        raw += decoded
        last_end = found.end(1)
    if raw:
        runs += [r for r in [printable_runs(bytes(raw))] if r is not None]
    return "\n".join(runs) if runs else None


#: Characters that fold to ASCII letters and digits (full-width forms, mathematical
#: alphanumerics) or are ASCII: what a text in another Unicode encoding is read for.
