"""The head-to-head grid as inline SVG: attackers down, defenders across, each pairing's
matches as one cell coloured by what decided most of them. Pure: the grid in (as the
leaderboard snapshot holds it, ``rules.ratings.head_to_head``), markup out; colours come from CSS
classes (``.h2h-leak``...), so the grid follows the page's light or dark theme."""

from __future__ import annotations

from typing import Any, Final

from markupsafe import Markup, escape

__all__ = ["LEGEND", "head_to_head_grid"]

#: Each outcome a cell counts, as the legend and the cells' titles name it.
LEGEND: Final = {
    "leak": "attacker won: the code leaked",
    "hijack": "attacker won: the defender said the hijack phrase",
    "attacker": "attacker won otherwise (utility, a forfeit)",
    "draw": "draw",
    "defender": "defender won",
}
_CELL_W: Final = 46
_CELL_H: Final = 30
_LABEL_W: Final = 150
_HEAD_H: Final = 110
_NAME_CHARS: Final = 22


def _short(name: str) -> str:
    return name if len(name) <= _NAME_CHARS else name[: _NAME_CHARS - 1] + "\u2026"


def _cell(x: float, y: float, attacker: str, defender: str, counts: dict[str, int]) -> str:
    total = sum(counts.values())
    wins = counts["leak"] + counts["hijack"] + counts["attacker"]
    most = max(LEGEND, key=lambda kind: (counts[kind], kind == "defender"))
    told = ", ".join(f"{counts[k]} {LEGEND[k]}" for k in LEGEND if counts[k])
    tip = f"{attacker} attacking {defender}: {total} match{'es' * (total != 1)} ({told})"
    return (
        f'<g class="h2h-cell"><title>{escape(tip)}</title>'
        f'<rect class="h2h-{most}" x="{x}" y="{y}" width="{_CELL_W - 2}" '
        f'height="{_CELL_H - 2}" rx="3"/>'
        f'<text x="{x + (_CELL_W - 2) / 2}" y="{y + _CELL_H / 2 + 3}" text-anchor="middle">'
        f"{wins}\u2013{counts['draw']}\u2013{counts['defender']}</text></g>"
    )


def head_to_head_grid(grid: dict[str, Any]) -> Markup:
    """The grid; each cell reads attacker wins–draws–defender wins, its title says how."""
    attackers, defenders, cells = grid["attackers"], grid["defenders"], grid["cells"]
    width = _LABEL_W + _CELL_W * len(defenders) + _HEAD_H  # the last name leans right
    height = _HEAD_H + _CELL_H * len(attackers)
    label = f"Head to head: {len(attackers)} attackers (rows) by {len(defenders)} defenders"
    parts = [
        f'<svg class="h2h" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(label)}"><title>{escape(label)}</title>'
    ]
    for j, defender in enumerate(defenders):
        x = _LABEL_W + _CELL_W * j + _CELL_W / 2
        parts.append(
            f'<text class="axis" transform="translate({x},{_HEAD_H - 6}) rotate(-45)">'
            f"{escape(_short(defender['name']))}</text>"
        )
    for i, attacker in enumerate(attackers):
        y = _HEAD_H + _CELL_H * i
        parts.append(
            f'<text class="axis" x="{_LABEL_W - 6}" y="{y + _CELL_H / 2 + 3}" text-anchor="end">'
            f"{escape(_short(attacker['name']))}</text>"
        )
        for j, defender in enumerate(defenders):
            counts = cells[i][j]
            if counts is not None:
                x = _LABEL_W + _CELL_W * j
                parts.append(_cell(x, y, attacker["name"], defender["name"], counts))
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - built from numbers and escaped text
