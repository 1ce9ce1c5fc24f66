"""What the leaderboard page shows: the latest published snapshots, filtered, and the live table.

Read-only: a page never computes a snapshot (``palaestra serve`` publishes
them on its schedule, the admin on demand); without one the page says so.
The published cage table is narrowed and ranked again exactly as the API
does it (``engine.leaderboard_tables.filter_cage``).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

from palaestra.engine.ratings.leaderboard import latest
from palaestra.engine.ratings.live_table import cage_fighters, live_table
from palaestra.errors import Conflict, InvalidRequest
from palaestra.platform import Platform
from palaestra.protocol import Role
from palaestra.protocol.constants import Arena
from palaestra.rules.leaderboard_tables import ENTRANT_TYPES, filter_agents, filter_cage
from palaestra.store.paging import (
    FIRST_PAGE,
    Page,
    decode_position,
    encode_position,
)
from palaestra.web.charts import IntervalScale

__all__ = [
    "PAGE_SIZE",
    "CageBoard",
    "EdgeBoard",
    "cage_board",
    "edgearena_board",
]

ROLES: Final = tuple(role.value for role in Role)
#: Rows of the published table on one page.
PAGE_SIZE: Final = 50
#: The intervals drawn as bars (attack and defence are given as numbers beside them).
_DRAWN: Final = ("overall",)


@dataclass(frozen=True, slots=True)
class CageBoard:
    entrant_type: str | None
    fighter_class: str | None
    classes: list[str]
    published: bool
    computed_at: float | None = None
    match_count: int = 0
    method: dict[str, Any] = field(default_factory=dict)
    advantage: dict[str, float] | None = None
    fighters: list[dict[str, Any]] = field(default_factory=list)
    fighters_total: int = 0  # in the snapshot, before the filters
    summary: list[dict[str, Any]] = field(default_factory=list)
    differences: list[dict[str, Any]] = field(default_factory=list)
    live: Page[dict[str, Any]] = field(default_factory=lambda: Page([], None))
    # The published table shows a page of ``fighters``: the cursors of the pages around it.
    next_cursor: str | None = None
    previous_cursor: str | None = None
    scale: IntervalScale | None = None  # shared by every bar of the fighters' table
    group_scale: IntervalScale | None = None  # shared by the entrant-type comparison
    head_to_head: dict[str, Any] | None = None  # rules.head_to_head, of the filtered fighters

    @property
    def filtered(self) -> bool:
        return self.entrant_type is not None or self.fighter_class is not None


@dataclass(frozen=True, slots=True)
class EdgeBoard:
    published: bool
    computed_at: float | None = None
    task_count: int = 0
    method: dict[str, Any] = field(default_factory=dict)
    # The roles with rows on this page (and, on the first, those with none at all).
    roles: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)
    next_cursor: str | None = None
    previous_cursor: str | None = None


def _bounds(rows: Sequence[dict[str, Any]], sides: Sequence[str]) -> list[tuple[float, float]]:
    found = []
    for row in rows:
        for side in sides:
            interval = row.get(side)
            if isinstance(interval, dict):
                found.append((float(interval["low"]), float(interval["high"])))
    return found


async def cage_board(
    platform: Platform,
    *,
    entrant_type: str | None = None,
    fighter_class: str | None = None,
    cursor: str | None = None,
    live_cursor: str | None = None,
    page_size: int = PAGE_SIZE,
) -> CageBoard:
    """The cage leaderboard narrowed to an entrant type and/or a class, a page of its
    published table and a page of its live table.

    A cursor of an older snapshot (or none a page gave) shows the first page.
    """
    entrant_type = entrant_type if entrant_type in ENTRANT_TYPES else None
    fighter_class = (fighter_class or "").strip()[:32] or None
    facts = await cage_fighters(platform)
    classes = sorted(
        set(platform.settings.fighter_classes) | {f.fighter_class for f in facts if f.fighter_class}
    )
    live = await _live(platform, entrant_type, fighter_class, page_size, live_cursor or None)
    snapshot = await latest(platform, Arena.CAGE)
    if snapshot is None:
        return CageBoard(entrant_type, fighter_class, classes, published=False, live=live)
    table = filter_cage(snapshot.data, entrant_type=entrant_type, fighter_class=fighter_class)
    fighters = table["fighters"]
    start, end = _window(cursor, snapshot.computed_at, page_size)
    following, before = _around(snapshot.computed_at, start, end, len(fighters), page_size)
    return CageBoard(
        entrant_type,
        fighter_class,
        classes,
        published=True,
        computed_at=snapshot.computed_at,
        match_count=snapshot.match_count,
        method=table["method"],
        advantage=table["advantage"],
        fighters=fighters[start:end],
        fighters_total=len(snapshot.data.get("fighters", [])),
        next_cursor=following,
        previous_cursor=before,
        summary=table["summary"],
        differences=table["differences"],
        live=live,
        scale=IntervalScale.over(_bounds(fighters, _DRAWN)) if fighters else None,
        group_scale=(
            IntervalScale.over(_bounds([*table["summary"], *table["differences"]], _DRAWN))
            if table["summary"]
            else None
        ),
        head_to_head=_grid_of(snapshot.data.get("head_to_head"), fighters),
    )


def _grid_of(
    grid: dict[str, Any] | None, fighters: Sequence[dict[str, Any]]
) -> dict[str, Any] | None:
    """The snapshot's head-to-head grid narrowed to the fighters the filters keep."""
    if not grid:
        return None
    kept = {f["fighter_id"] for f in fighters}
    rows = [i for i, a in enumerate(grid["attackers"]) if a["id"] in kept]
    columns = [j for j, d in enumerate(grid["defenders"]) if d["id"] in kept]
    return {
        "attackers": [grid["attackers"][i] for i in rows],
        "defenders": [grid["defenders"][j] for j in columns],
        "cells": [[grid["cells"][i][j] for j in columns] for i in rows],
    }


def _window(cursor: str | None, snapshot: float, page_size: int) -> tuple[int, int]:
    """Where a page of a published table starts and ends."""
    start = 0
    # A page link from before the last publication (or none a page gave): the top.
    with suppress(InvalidRequest, Conflict):
        start = decode_position(cursor, snapshot) if cursor else 0
    return start, start + page_size


def _around(
    snapshot: float, start: int, end: int, total: int, page_size: int
) -> tuple[str | None, str | None]:
    """The cursors of the pages after and before the window ``start:end`` of a table."""
    following = encode_position(snapshot, end) if end < total else None
    if start == 0:
        return following, None
    newer = max(start - page_size, 0)
    return following, encode_position(snapshot, newer) if newer else FIRST_PAGE


async def _live(
    platform: Platform,
    entrant_type: str | None,
    fighter_class: str | None,
    page_size: int,
    cursor: str | None,
) -> Page[dict[str, Any]]:
    table = partial(live_table, platform, entrant_type=entrant_type, fighter_class=fighter_class)
    try:
        return await table(limit=page_size, cursor=cursor)
    except InvalidRequest:
        return await table(limit=page_size)  # not a cursor a page gave: the top of the table


async def edgearena_board(
    platform: Platform, cursor: str | None = None, page_size: int = PAGE_SIZE
) -> EdgeBoard:
    """A page of the edgearena table (agents by role, then rank), one section per role.

    A cursor of an older snapshot (or none a page gave) shows the first page."""
    snapshot = await latest(platform, Arena.EDGEARENA)
    if snapshot is None:
        return EdgeBoard(published=False)
    # The page's sections go in the roles' order: the table is paged in that order too.
    rows = sorted(
        (row for row in filter_agents(snapshot.data)["agents"] if row.get("role") in ROLES),
        key=lambda row: ROLES.index(row["role"]),
    )
    start, end = _window(cursor, snapshot.computed_at, page_size)
    shown = rows[start:end]
    roles = [
        (role, [r for r in shown if r.get("role") == role])
        for role in ROLES
        if any(r.get("role") == role for r in shown)
        or (start == 0 and not any(r.get("role") == role for r in rows))
    ]
    following, before = _around(snapshot.computed_at, start, end, len(rows), page_size)
    return EdgeBoard(
        published=True,
        computed_at=snapshot.computed_at,
        task_count=snapshot.match_count,
        method=snapshot.data.get("method", {}),
        roles=roles,
        next_cursor=following,
        previous_cursor=before,
    )
