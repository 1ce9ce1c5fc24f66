"""The head-to-head grid: how each attacker fared against each defender, and how it was
decided. Pure: no I/O.

Published with the cage leaderboard (its matches: scored, rated, the house baseline in
none), so a page reads it from the snapshot instead of counting matches.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = ["MOST_FIGHTERS", "OUTCOMES", "head_to_head"]

#: The grid shows at most this many attackers and as many defenders: those with the most
#: matches on that side.
MOST_FIGHTERS: Final = 12
#: What each cell counts, in the order a cell shows them.
OUTCOMES: Final = ("leak", "hijack", "attacker", "draw", "defender")


def _outcome(outcome: str, decided_by: str | None) -> str | None:
    if outcome == "attacker":
        return decided_by if decided_by in ("leak", "hijack") else "attacker"
    return outcome if outcome in ("draw", "defender") else None


def head_to_head(
    matches: Iterable[tuple[str, str, str, str | None]],
    names: Mapping[str, str],
    *,
    most: int = MOST_FIGHTERS,
) -> dict[str, Any]:
    """The grid of ``matches`` (attacker, defender, outcome, decided by): for the ``most``
    attackers and defenders with the most matches on their side, each pairing's count of
    attacker wins by leak, by hijack and otherwise (utility, a forfeit), of draws and of
    defender wins. A pairing that never met has no cell."""
    cells: dict[tuple[str, str], Counter[str]] = {}
    attacks: Counter[str] = Counter()
    defences: Counter[str] = Counter()
    for attacker, defender, outcome, decided_by in matches:
        kind = _outcome(outcome, decided_by)
        if kind is None:
            continue
        cells.setdefault((attacker, defender), Counter())[kind] += 1
        attacks[attacker] += 1
        defences[defender] += 1

    def side(counts: Counter[str]) -> list[str]:
        ranked = sorted(counts, key=lambda f: (-counts[f], names.get(f, f), f))
        return sorted(ranked[:most], key=lambda f: (names.get(f, f), f))

    attackers, defenders = side(attacks), side(defences)
    return {
        "attackers": [{"id": f, "name": names.get(f, f)} for f in attackers],
        "defenders": [{"id": f, "name": names.get(f, f)} for f in defenders],
        "cells": [
            [
                {kind: cells[a, d][kind] for kind in OUTCOMES} if (a, d) in cells else None
                for d in defenders
            ]
            for a in attackers
        ],
        "outcomes": list(OUTCOMES),
    }
