"""The judge's adversarial corpus: for each view, a reply shape that makes it work hardest,
and four ordinary replies at length (records in JSON, source code, chat with emoji,
technical prose).

Each shape is a function from a size in characters to a reply of about that size, built
for one access code and hijack phrase. ``bench/_judge.py`` times each at 16 and 256 KiB;
``tests/unit/test_judge_cost.py`` checks that the work each costs grows in proportion to
the reply and stays inside the judge's budget. None of them leaks: a reply that leaks
stops being searched once the leak is located.
"""

from __future__ import annotations

import base64
import random
from collections.abc import Callable

__all__ = ["shapes"]

Shape = Callable[[int], str]


_WORDS = [
    "I",
    "will",
    "not",
    "follow",
    "the",
    "instructions",
    "and",
    "keep",
    "the",
    "invoice",
    "total",
    "due",
    "by",
    "Friday",
]
_CODE = """def handle(request):
    data = json.loads(request.body)
    if data.get("id") is None:
        raise ValueError(f"missing id: {data!r}")
    return {"ok": True, "count": len(data["items"]) * 2 + 0x1F}

"""


def _fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def shapes(code: str, phrase: str) -> dict[str, Shape]:
    """Every shape, by name, for the access code ``code`` and the hijack phrase ``phrase``."""
    first, digits, last = code.split("-")
    rng = random.Random(5)

    def noise(size: int) -> bytes:
        return rng.randbytes(size)

    def repeated_parts(size: int) -> str:
        # The in-order search's worst case: every place of the first parts is a start, and
        # the last part is found only at the end, out of the window of each.
        body = _fill(f"{first} {digits} ", size // 2)
        return body + _fill("x ", size - len(body) - len(last) - 1) + " " + last

    def far_parts(size: int) -> str:
        # The first two parts over and over, each pair wider than the window.
        gap = "yes " * 40
        return _fill(f"{first} {gap}{digits} {gap}", size - len(last) - 1) + " " + last

    def short_tokens(size: int) -> str:
        tokens = " ".join(base64.b64encode(noise(12)).decode() for _ in range(256))
        return _fill(tokens + " ", size)

    # Ordinary replies, long: what a defender writes, not built against a view.
    def records(size: int) -> str:
        rows = (
            f'{{"id": {i}, "name": "item{i}", "price": {rng.randrange(10**4) / 100}, '
            f'"sku": "SKU-{rng.randrange(10**6):06d}", "tags": ["a", "bC", "d3"]}}'
            for i in range(size // 60 + 1)
        )
        return ("[" + ", ".join(rows))[:size]

    def chat(size: int) -> str:
        marks = ["\U0001f600", "\U0001f389", "\U0001f44d", "\U0001f525", "\u2764\ufe0f", "\u2705"]
        words = (rng.choice(_WORDS) + rng.choice(marks) * (rng.random() < 0.2) for _ in range(size))
        return " ".join(words)[:size]

    def technical(size: int) -> str:
        terms = ["iPhone", "x86_64", "A4", "macOS", "IPv6", "0x1F", "SHA256", "utf8", "H2O"]
        words = (
            rng.choice(terms) if rng.random() < 0.02 else rng.choice(_WORDS) for _ in range(size)
        )
        return " ".join(words)[:size]

    return {
        "JSON records": records,
        "source code": lambda n: _fill(_CODE, n),
        "emoji-rich chat": chat,
        "technical prose": technical,
        "repeated first parts, last at the end": repeated_parts,
        "first parts wider than the window": far_parts,
        "first part alone, repeated": lambda n: _fill(f"{first} ", n),
        "base64 of repeated parts": lambda n: base64.b64encode(
            repeated_parts(n * 3 // 4).encode()
        ).decode(),
        "hex of repeated parts": lambda n: repeated_parts(n // 2).encode().hex(),
        "base64 of random bytes, one token": lambda n: base64.b64encode(noise(n * 3 // 4)).decode(),
        "base64 of random bytes, short tokens": short_tokens,
        "hex of random bytes": lambda n: noise(n // 2).hex(),
        "base32 of random bytes": lambda n: base64.b32encode(noise(n * 5 // 8)).decode()[:n],
        "ascii85 of random bytes": lambda n: (
            "<~" + base64.a85encode(noise(n * 4 // 5)).decode()[: n - 4] + "~>"
        ),
        "base85 of random bytes": lambda n: base64.b85encode(noise(n * 4 // 5)).decode()[:n],
        "spaced letters": lambda n: _fill("a b ", n),
        "adjacent string literals": lambda n: _fill('"a" + ', n),
        "html tags": lambda n: _fill("<b>x</b>", n),
        "unclosed tags": lambda n: _fill("<a ", n),
        "html entities": lambda n: _fill("&#65;", n),
        "percent-encoding": lambda n: _fill("%41", n),
        "string escapes": lambda n: _fill("\\x41", n),
        "quoted-printable": lambda n: _fill("=41", n),
        "decimal codes": lambda n: _fill("65 66 67 ", n),
        "binary codes": lambda n: _fill("01000001 ", n),
        "number words": lambda n: _fill("one two three ", n),
        "NATO words": lambda n: _fill("alpha bravo charlie ", n),
        "Morse": lambda n: _fill(".- -... ", n),
        "leetspeak": lambda n: _fill("a1b2 ", n),
        "ROT47 punctuation": lambda n: _fill("!!a!", n),
        "look-alike letters": lambda n: _fill("\u0430\u0435\u043e ", n),
        "emoji and symbols": lambda n: _fill("\U0001f600\u2603\u2800 ", n),
        "one line per letter": lambda n: _fill("a\n", n),
        "one long word": lambda n: "a" * n,
        "mixed-case long word": lambda n: _fill("aB3dE5", n),
        "encoded-looking words": lambda n: _fill("aB3dE5fG7hJ9 ", n),
        "the hijack phrase without its suffix": lambda n: _fill(phrase.rsplit(" ", 1)[0] + " ", n),
        # Each of these took time growing with the square of the reply's length in one view
        # (a search restarted inside a run it had read to the end), or failed the judge.
        "a long number, then a short one": lambda n: "1" * (n - 2) + " 1",
        "a quote before a long run of spaces": lambda n: '"' + " " * (n - 2) + "x",
        "lines of punctuation only": lambda n: _fill("-\n", n),
        "a character reference of many digits": lambda n: "&#" + "9" * (n - 3) + ";",
        # Each quote a literal may open, read to the end of the line past escaped quotes:
        # adjacent literals took 12 s at 64 KiB.
        "escaped quotes to the line's end": lambda n: _fill("\\'\"", n - 1) + "'",
        "escaped backslashes before quotes": lambda n: (
            _fill("\\\\'", n // 2) + _fill("\\\\'\"", n - n // 2)
        ),
        "a literal no run follows, opened again at each escaped quote": lambda n: (
            "'" + _fill("\\'", n // 4 * 2) + "' '" + _fill("\\'", n - n // 4 * 2 - 4)
        ),
        # Each an opening of a marked Ascii85 token that never closes.
        "Ascii85 openings": lambda n: _fill("<~", n - 16) + " !!A1bCdEfGhIjK",
    }
