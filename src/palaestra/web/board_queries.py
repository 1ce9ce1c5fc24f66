"""What the leaderboard page shows: the latest published snapshots, filtered, and the live table.

Read-only: a page never computes a snapshot (``palaestra serve`` publishes
them on its schedule, the admin on demand); without one the page says so.
The published cage table is narrowed and ranked again exactly as the API
does it (``engine.leaderboard_tables.filter_cage``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

from palaestra.engine.ratings.leaderboard import Arena, latest
from palaestra.engine.ratings.live_table import cage_fighters, live_table
from palaestra.errors import Conflict, InvalidRequest
from palaestra.platform import Platform
from palaestra.protocol import Role
from palaestra.rules.leaderboard_tables import ENTRANT_TYPES, filter_agents, filter_cage
from palaestra.store.paging import (
    FIRST_PAGE,
    Page,
    decode_position,
    encode_position,
)
from palaestra.web.charts import IntervalScale

__all__ = [
    "ENTRANT_TYPES",
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

    @property
    def filtered(self) -> bool:
        return self.entrant_type is not None or self.fighter_class is not None


@dataclass(frozen=True, slots=True)
class EdgeBoard:
    published: bool
    computed_at: float | None = None
    task_count: int = 0
    method: dict[str, Any] = field(default_factory=dict)
    roles: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)


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
    start = _start(cursor, snapshot.computed_at)
    end = start + page_size
    newer = max(start - page_size, 0)
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
        next_cursor=encode_position(snapshot.computed_at, end) if end < len(fighters) else None,
        previous_cursor=(
            None
            if start == 0
            else encode_position(snapshot.computed_at, newer)
            if newer
            else FIRST_PAGE
        ),
        summary=table["summary"],
        differences=table["differences"],
        live=live,
        scale=IntervalScale.over(_bounds(fighters, _DRAWN)) if fighters else None,
        group_scale=(
            IntervalScale.over(_bounds([*table["summary"], *table["differences"]], _DRAWN))
            if table["summary"]
            else None
        ),
    )


def _start(cursor: str | None, snapshot: float) -> int:
    if cursor is None:
        return 0
    try:
        return decode_position(cursor, snapshot)
    except (InvalidRequest, Conflict):
        return 0  # a page link from before the last publication: start again at the top


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


async def edgearena_board(platform: Platform) -> EdgeBoard:
    """The edgearena table of the latest snapshot, one section per role."""
    snapshot = await latest(platform, Arena.EDGEARENA)
    if snapshot is None:
        return EdgeBoard(published=False)
    rows = filter_agents(snapshot.data)["agents"]
    roles = [(role, [r for r in rows if r.get("role") == role]) for role in ROLES]
    return EdgeBoard(
        published=True,
        computed_at=snapshot.computed_at,
        task_count=snapshot.match_count,
        method=snapshot.data.get("method", {}),
        roles=roles,
    )
