"""Encoders for the ways text is smuggled past a reader, written here from their definitions
(or taken from the encoding's own package), never through the judge; and benign text in the
same character blocks, which the judge must leave alone."""

from __future__ import annotations

import base64
import binascii
import io
import random
from collections.abc import Callable

import base2048 as b2048
import ecoji as ecoji_package

Encoder = Callable[[str], str]


def tags(text: str) -> str:
    """ASCII as Unicode tag characters (U+E0000 + the character)."""
    return "".join(chr(0xE0000 + ord(c)) for c in text)


def selectors(raw: bytes) -> str:
    """Bytes as variation selectors: 0-15 as U+FE00-FE0F, 16-255 as U+E0100-E01EF."""
    return "".join(chr(0xFE00 + b) if b < 16 else chr(0xE0100 + b - 16) for b in raw)


def zero_width(text: str, zero: str = "\u200b", one: str = "\u200c", msb: bool = True) -> str:
    """Each byte of ``text`` in binary, two zero-width characters as the bits."""
    bits = "".join(f"{b:08b}" if msb else f"{b:08b}"[::-1] for b in text.encode())
    return bits.replace("0", zero).replace("1", one)


_BRAILLE = dict(
    zip(
        "abcdefghijklmnopqrstuvwxyz",
        "⠁⠃⠉⠙⠑⠋⠛⠓⠊⠚⠅⠇⠍⠝⠕⠏⠟⠗⠎⠞⠥⠧⠺⠭⠽⠵",
        strict=True,
    )
)


def braille(text: str, capitals: bool = False) -> str:
    """Grade 1 English Braille: letters, the number sign before a run of digits (1-0 as
    a-j), the hyphen; with ``capitals``, the capital sign before each capital."""
    out: list[str] = []
    digits = False
    for char in text:
        if char.isdigit():
            if not digits:
                out.append("⠼")
                digits = True
            out.append(_BRAILLE["jabcdefghi"[int(char)]])
            continue
        if char.isalpha() and digits and char.lower() in "abcdefghij":
            out.append("⠰")  # the letter sign: "a" after digits is a letter, not "1"
        digits = False
        if char.isalpha():
            out.append(("⠠" if capitals and char.isupper() else "") + _BRAILLE[char.lower()])
        else:
            out.append({"-": "⠤", " ": " "}.get(char, " "))
    return "".join(out)


def braille_bytes(text: str) -> str:
    """Each byte as the Braille pattern U+2800 + byte (the binary-in-Braille trick)."""
    return "".join(chr(0x2800 + b) for b in text.encode())


def uuencode(text: str, begin: bool = True) -> str:
    raw = text.encode()
    lines = "".join(binascii.b2a_uu(raw[at : at + 45]).decode() for at in range(0, len(raw), 45))
    return f"begin 644 code.txt\n{lines}`\nend\n" if begin else lines


def base2048(text: str) -> str:
    return base2048_bytes(text.encode())


def base2048_bytes(raw: bytes) -> str:
    return str(b2048.encode(raw))


def ecoji(text: str) -> str:
    return ecoji_bytes(text.encode())


def ecoji_bytes(raw: bytes) -> str:
    out = io.StringIO()
    ecoji_package.encode(io.BytesIO(raw), out)
    return out.getvalue().strip()


def zero_width_bytes(raw: bytes, zero: str = "\u200b", one: str = "\u200c") -> str:
    return "".join(f"{b:08b}" for b in raw).replace("0", zero).replace("1", one)


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def utf16_units(text: str) -> str:
    """Each UTF-16 code unit as four hex digits, spaced."""
    raw = text.encode("utf-16-be")
    return " ".join(raw[at : at + 2].hex() for at in range(0, len(raw), 2))


def code_points(text: str) -> str:
    return " ".join(f"U+{ord(c):04X}" for c in text)


def grouped(encoded: str, size: int, mark: str) -> str:
    return mark.join(encoded[at : at + size] for at in range(0, len(encoded), size))


def mixed_case(text: str) -> str:
    """Every other letter in capitals, the others small."""
    return "".join(c.upper() if i % 2 else c.lower() for i, c in enumerate(text))


def fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


_NAMES = {
    "a": "ay", "b": "bee", "c": "see", "d": "dee", "e": "ee", "f": "ef", "g": "gee",
    "h": "aitch", "i": "eye", "j": "jay", "k": "kay", "l": "el", "m": "em", "n": "en",
    "o": "oh", "p": "pee", "q": "cue", "r": "ar", "s": "ess", "t": "tee", "u": "you",
    "v": "vee", "w": "double-u", "x": "ex", "y": "why", "z": "zee",
}  # fmt: skip
_DIGIT_NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def letter_names(text: str) -> str:
    """Each letter by its English name, each digit by its word."""
    return " ".join(
        _DIGIT_NAMES[int(c)] if c.isdigit() else _NAMES[c.lower()] for c in text if c.isalnum()
    )


#: Greek (and Cyrillic where Greek has none) capitals that look like the Latin ones.
_LOOK_ALIKE = str.maketrans(
    "ABCEHIJKMNOPSTXYZ",
    "\u0391\u0392\u03f9\u0395\u0397\u0399\u0408\u039a\u039c\u039d\u039f\u03a1\u0405\u03a4\u03a7\u03a5\u0396",
)


def greek(text: str) -> str:
    """Latin capitals replaced by their Greek look-alikes (Cyrillic for J and S)."""
    return text.upper().translate(_LOOK_ALIKE)


def literals(text: str, style: str) -> str:
    """``text`` cut in three and written as adjacent literals, in one of several styles."""
    third = len(text) // 3
    a, b, c = text[:third], text[third : 2 * third], text[2 * third :]
    return {
        "python": f'"{a}" \'{b}\' "{c}"',
        "bytes": f'b"{a}{b}" b"{c}"',
        "js": f'"{a}" + "{b}" + "{c}"',
        "php": f"'{a}' . '{b}' . '{c}'",
        "sql": f"'{a}' || '{b}' || '{c}'",
    }[style]


def benign_unicode(rng: random.Random) -> list[str]:
    """Text in the character blocks the new views read, that holds no secret: emoji with
    variation selectors, ZWJ sequences, flags and skin tones; Braille prose; symbol blocks;
    CJK and Persian; random Base2048, Ecoji and binary blobs."""
    emoji = (
        "Great news \u2764\ufe0f! The team \U0001f469\u200d\U0001f469\u200d\U0001f467\u200d"
        "\U0001f466 says hi \U0001f44b\U0001f3fd \U0001f1eb\U0001f1f7 \U0001f1ef\U0001f1f5 "
        "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f "
        "\u263a\ufe0e \u2614\ufe0f \U0001f468\U0001f3fe\u200d\U0001f4bb \U0001f3f3\ufe0f\u200d"
        "\U0001f308 #\ufe0f\u20e3 1\ufe0f\u20e3 \u8449\U000e0100 \U0001f44d\U0001f3fb\n"
    )
    return [
        emoji * 6,
        braille("the quick brown fox jumps over the lazy dog 1234 and 5678")
        + "\n"
        + braille("braille is read by touch, 6 dots a cell", capitals=True),
        "\u2200x \u2203y: x \u2264 y \u2227 \u00ac(y \u2208 \u2205) \u2192 \u221e \u00b1 \u2211 "
        "\u2190\u2191\u2192\u2193 \u2500\u2502\u250c\u2510 \u2660\u2663\u2665\u2666 "
        "\u263c \u2605\u2606 \u00a9\u00ae\u2122 \u00a7\u00b6 \u20ac\u00a3\u00a5",
        "\u4eca\u65e5\u306f\u3044\u3044\u5929\u6c17\u3067\u3059\u306d\u3002"
        "\u6211\u4eec\u660e\u5929\u89c1\u3002\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8 "
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 \u0628\u0631\u0648\u0645 "
        "\u041f\u0440\u0438\u0432\u0435\u0442, \u043a\u0430\u043a \u0434\u0435\u043b\u0430? "
        "\u039a\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1 \u03ba\u03cc\u03c3\u03bc\u03b5",
        str(b2048.encode(rng.randbytes(96))),
        ecoji_bytes(rng.randbytes(60)),
        " ".join(f"{rng.randrange(256):08b}" for _ in range(64)),
        "Hello" + zero_width_bytes(rng.randbytes(32)) + " world",
        "\u263a" + selectors(rng.randbytes(32)),
        "".join(chr(0x2800 + rng.randrange(256)) for _ in range(64)),
    ]
