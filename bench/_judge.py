"""The cage.v1 judge alone: a defender reply of 1 KiB and of 256 KiB, each view's share, and
the adversarial corpus.

    .venv/bin/python bench/_judge.py [--corpus-only]

``bench/cage.py`` prints the same figures after the matches. Replies are ordinary prose with
numbers and an ANSWER line (what a defender sends on most turns), drawn from a fixed seed; a
1 KiB reply that leaks (the code's parts with words between them) is timed as well, since
finding where a leak is costs more than finding there is none. Each run judges the reply as
a new one (a number added at its end), as a referee does. Medians of repeated runs, of
wall time and of CPU time. Targets: a median under 1 ms at 1 KiB and under 100 ms at 256
KiB, of CPU time (on a machine shared with other work, wall time measures that work too).

The adversarial corpus (``bench/_judge_shapes.py``: for each view, the reply shape that makes
it work hardest) is judged at 16 and at 256 KiB (medians of three: one run, on a machine
shared with other work, can take twice its time): CPU time per KiB, CPU time at 256 KiB
(target: under 100 ms for every shape), and the characters the judge read per character of
the reply, against its budget (``judge_budget``).
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._judge_shapes import shapes
from palaestra.rules.cage.material import Material, draw_material
from palaestra.rules.judge import judge_reply
from palaestra.rules.judge.chains import BUDGET_PER_CHAR, view_chains
from palaestra.rules.judge.match import fold_view, needles, scan
from palaestra.rules.judge.views import CIPHERS, VIEWS

__all__ = ["report"]

SMALL_TARGET_MS = 1.0
LARGE_TARGET_MS = 100.0
_WORDS = [
    "I",
    "will",
    "not",
    "follow",
    "the",
    "opponent's",
    "instructions",
    "and",
    "I",
    "keep",
    "the",
    "details",
    "of",
    "this",
    "office",
    "to",
    "myself",
    "the",
    "invoice",
    "total",
    "is",
    "due",
    "by",
    "Friday",
    "please",
    "note",
    "the",
    "meeting",
    "room",
    "and",
    "the",
    "ticket",
    "number",
    "for",
    "your",
    "order",
    "a",
    "report",
    "on",
    "the",
    "budget",
    "of",
    "the",
    "team",
]


def prose(size: int, seed: int = 7) -> str:
    """About ``size`` characters of defender-like prose with numbers, ending in an ANSWER."""
    rng = random.Random(seed)
    out: list[str] = []
    length = 0
    while length < size - 12:
        word = str(rng.randrange(1, 10_000)) if rng.random() < 0.05 else rng.choice(_WORDS)
        word += rng.choice(["", "", "", "", ",", "."]) + ("\n" if rng.random() < 0.03 else " ")
        out.append(word)
        length += len(word)
    return "".join(out)[: size - 12] + "\nANSWER: 42"


def _median_ms(work: Callable[[], object], budget_s: float = 1.0, most: int = 2000) -> float:
    return _medians_ms(work, budget_s, most)[0]


def _medians_ms(
    work: Callable[[], object], budget_s: float = 1.0, most: int = 2000
) -> tuple[float, float]:
    """The median wall time and the median CPU time of ``work``, in ms."""
    walls: list[float] = []
    cpus: list[float] = []
    deadline = time.perf_counter() + budget_s
    while len(walls) < most and (len(walls) < 5 or time.perf_counter() < deadline):
        start, cpu = time.perf_counter(), time.process_time()
        work()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls) * 1000, statistics.median(cpus) * 1000


def _judge(reply: str, material: Material) -> Callable[[], object]:
    """Judge ``reply`` once per call, each time as a reply never seen (a number added at
    its end): the views keep what they found for the last few texts, and a referee never
    judges the same reply twice."""
    calls = iter(range(10**9))
    return lambda: judge_reply(
        f"{reply} {next(calls)}",
        access_code=material.access_code,
        hijack_phrase=material.hijack_phrase,
        task=material.task,
    )


def _per_view_us(reply: str, material: Material, budget: float) -> list[tuple[str, float]]:
    rows = [
        (view.name, _median_ms(partial(view.read, reply), 0.2 * budget) * 1000) for view in VIEWS
    ]
    every = len(CIPHERS)
    found = needles(material.access_code, None, True, every) + needles(
        material.hijack_phrase, None, False, every
    )
    folded = fold_view(reply)
    rows.append(
        (
            "scan (both secrets, every cipher)",
            _median_ms(lambda: list(scan(folded, found)), 0.2 * budget) * 1000,
        )
    )
    return rows


def _cpu_ms(reply: str, material: Material) -> tuple[float, int, bool]:
    """The CPU time of judging ``reply`` once, the characters read, and whether it leaked."""
    start = time.process_time()
    verdict = judge_reply(
        reply,
        access_code=material.access_code,
        hijack_phrase=material.hijack_phrase,
        task=material.task,
    )
    return (time.process_time() - start) * 1000, verdict.spent, verdict.leaked


def corpus_report(material: Material) -> bool:
    """Print the adversarial corpus's figures; whether every shape meets the target."""
    print(
        f"adversarial corpus (CPU time; target < {LARGE_TARGET_MS:.0f} ms at 256 KiB; "
        f"budget {BUDGET_PER_CHAR} characters read per character, plus 4 MiB):"
    )
    print(f"  {'shape':40}{'16 KiB':>9}{'256 KiB':>10}{'ms/KiB':>8}{'read/char':>11}")
    met = 0
    corpus = shapes(material.access_code, material.hijack_phrase)
    for name, make in corpus.items():
        small, large = make(16 * 1024), make(256 * 1024)
        small_ms = statistics.median(_cpu_ms(f"{small} {n}", material)[0] for n in range(3))
        large_ms, spent, leaked = _cpu_ms(large, material)
        # Each a reply never seen (a number added): the views keep what they read last.
        large_ms = statistics.median(
            [large_ms, *(_cpu_ms(f"{large} {n}", material)[0] for n in range(1, 3))]
        )
        ok = large_ms < LARGE_TARGET_MS and not leaked
        met += ok
        print(
            f"  {name:40}{small_ms:7.1f}ms{large_ms:8.1f}ms{large_ms / 256:8.2f}"
            f"{spent / len(large):11.1f}  {'PASS' if ok else 'FAIL'}"
        )
    print(f"  {met} of {len(corpus)} shapes under {LARGE_TARGET_MS:.0f} ms at 256 KiB")
    return met == len(corpus)


def report(budget: float = 1.0, *, corpus: bool = True) -> bool:
    """Print the judge's figures; whether every target is met. ``budget`` scales the time
    each figure is measured for (each is a median of at least five runs); ``corpus`` adds
    the adversarial corpus."""
    material = draw_material(7)
    small, large = prose(1024), prose(256 * 1024)
    word, digits, last = material.access_code.split("-")
    leaking = small[:600] + f" first {word}, then {digits}, last {last}. " + small[600:900]
    small_ms, small_cpu = _medians_ms(_judge(small, material), budget)
    large_ms, large_cpu = _medians_ms(_judge(large, material), 3.0 * budget, most=15)
    leak_ms = _median_ms(_judge(leaking, material), budget)
    cut = len(large) * 3 // 4
    large_leak = large[:cut] + f" first {word}, then {digits}, last {last}. " + large[cut:]
    large_leak_ms = _median_ms(_judge(large_leak, material), 3.0 * budget, most=5)
    # The verdict is on CPU time: the judge is single-threaded, and on a machine shared
    # with other work its wall time measures the others too.
    ok = small_cpu < SMALL_TARGET_MS and large_cpu < LARGE_TARGET_MS
    chains = len(list(view_chains(small)))
    print(
        f"judge alone, 1 KiB reply: {small_ms * 1000:.0f} us median, CPU {small_cpu * 1000:.0f} us "
        f"(target < {SMALL_TARGET_MS:.0f} ms: {'PASS' if small_cpu < SMALL_TARGET_MS else 'FAIL'}"
        f"; {chains} chains of views read it)"
    )
    print(
        f"judge alone, 256 KiB reply: {large_ms:.1f} ms median, CPU {large_cpu:.1f} ms "
        f"(target < {LARGE_TARGET_MS:.0f} ms: {'PASS' if large_cpu < LARGE_TARGET_MS else 'FAIL'})"
    )
    print(f"judge alone, 1 KiB reply that leaks (evidence located): {leak_ms * 1000:.0f} us")
    print(f"judge alone, 256 KiB reply that leaks (evidence located): {large_leak_ms:.0f} ms")
    print("per view on the 1 KiB reply (us, median; most return at once: nothing to read):")
    for name, us in _per_view_us(small, material, budget):
        print(f"  {name:36}{us:8.1f}")
    if corpus:
        ok = corpus_report(material) and ok
    return ok


if __name__ == "__main__":
    if "--corpus-only" in sys.argv:
        sys.exit(0 if corpus_report(draw_material(7)) else 1)
    sys.exit(0 if report() else 1)
