"""What the leaderboard page shows: the latest published snapshots, filtered, and the live table.

Read-only: a page never computes a snapshot (``palaestra serve`` publishes
them on its schedule, the admin on demand); without one the page says so.
The published cage table is narrowed and ranked again exactly as the API
does it (``engine.leaderboard_tables.filter_cage``).

A published snapshot never changes once stored: each process reads and decodes the
newest one, and narrows and sorts its tables, once per publication
(:class:`_Published`), not once per view. A view reads only which snapshot is the
newest, through ``ix_leaderboard_snapshots_arena_at``. The live table is ranked again
only when a fighter or a live rating changed (``engine.ratings.live_table``). So a
view's cost does not grow with the fighters and agents the tables rank, nor with the
matches behind them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final
from weakref import WeakKeyDictionary

from sqlalchemy import select

from palaestra.engine.ratings.leaderboard import Snapshot
from palaestra.engine.ratings.live_table import fighter_classes, live_table
from palaestra.errors import Conflict, InvalidRequest
from palaestra.platform import Platform
from palaestra.protocol import Role
from palaestra.protocol.constants import Arena
from palaestra.rules.ratings.leaderboard_tables import ENTRANT_TYPES, filter_agents, filter_cage
from palaestra.store.db import Database
from palaestra.store.paging import (
    FIRST_PAGE,
    Page,
    decode_position,
    encode_position,
)
from palaestra.store.rating_models import LeaderboardSnapshot
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
#: Narrowed cage tables kept per publication (entrant type and class pairs asked for).
_TABLES_KEPT: Final = 32


@dataclass(frozen=True, slots=True)
class _CageTable:
    """A published cage table narrowed by the filters, with what its page draws of it."""

    table: dict[str, Any]
    scale: IntervalScale | None
    group_scale: IntervalScale | None
    head_to_head: dict[str, Any] | None

    @classmethod
    def of(
        cls, data: dict[str, Any], entrant_type: str | None, fighter_class: str | None
    ) -> _CageTable:
        table = filter_cage(data, entrant_type=entrant_type, fighter_class=fighter_class)
        fighters, groups = table["fighters"], [*table["summary"], *table["differences"]]
        return cls(
            table,
            IntervalScale.over(_bounds(fighters, _DRAWN)) if fighters else None,
            IntervalScale.over(_bounds(groups, _DRAWN)) if table["summary"] else None,
            _grid_of(data.get("head_to_head"), fighters),
        )


class _Published:
    """The newest snapshot of one arena as this process decoded it, with the tables the
    pages made of it (each computed once per publication)."""

    def __init__(self, snapshot_id: int, snapshot: Snapshot) -> None:
        self.snapshot_id = snapshot_id
        self.snapshot = snapshot
        self._cage: OrderedDict[tuple[str | None, str | None], _CageTable] = OrderedDict()
        self._edge: list[dict[str, Any]] | None = None
        self._edge_roles: set[str] = set()

    def cage_table(self, entrant_type: str | None, fighter_class: str | None) -> _CageTable:
        key = (entrant_type, fighter_class)
        table = self._cage.get(key)
        if table is None:
            table = _CageTable.of(self.snapshot.data, entrant_type, fighter_class)
            self._cage[key] = table
            if len(self._cage) > _TABLES_KEPT:
                self._cage.popitem(last=False)
        else:
            self._cage.move_to_end(key)
        return table

    def edge_rows(self) -> list[dict[str, Any]]:
        """The agents of the edgearena table with a role, in the roles' order."""
        if self._edge is None:
            self._edge = sorted(
                (
                    row
                    for row in filter_agents(self.snapshot.data)["agents"]
                    if row.get("role") in ROLES
                ),
                key=lambda row: ROLES.index(row["role"]),
            )
            self._edge_roles = {row["role"] for row in self._edge}
        return self._edge

    def edge_has(self, role: str) -> bool:
        """Whether the edgearena table has a row of ``role``."""
        self.edge_rows()
        return role in self._edge_roles


#: Per database (a platform's, while it is open), the snapshot each arena last published.
_published: WeakKeyDictionary[Database, dict[Arena, _Published]] = WeakKeyDictionary()


async def _newest(platform: Platform, arena: Arena) -> _Published | None:
    """The newest published snapshot of ``arena``: its id read each time, its data only
    when this process has not decoded that snapshot yet."""
    newest = (
        select(LeaderboardSnapshot.id)
        .where(LeaderboardSnapshot.arena == arena.value)
        .order_by(LeaderboardSnapshot.computed_at.desc(), LeaderboardSnapshot.id.desc())
        .limit(1)
    )
    held = _published.setdefault(platform.db, {})
    async with platform.db.session() as session:
        snapshot_id = await session.scalar(newest)
        if snapshot_id is None:
            held.pop(arena, None)
            return None
        known = held.get(arena)
        if known is not None and known.snapshot_id == snapshot_id:
            return known
        row = await session.get(LeaderboardSnapshot, snapshot_id)
        if row is None:  # removed since: a newer one was published meanwhile
            return None
        snapshot = Snapshot(arena, row.computed_at, row.match_count, row.data)
    held[arena] = found = _Published(snapshot_id, snapshot)
    return found


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
    head_to_head: dict[str, Any] | None = (
        None  # rules.ratings.head_to_head, of the filtered fighters
    )

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
    classes = sorted(set(platform.settings.fighter_classes) | await fighter_classes(platform))
    live = await _live(platform, entrant_type, fighter_class, page_size, live_cursor or None)
    published = await _newest(platform, Arena.CAGE)
    if published is None:
        return CageBoard(entrant_type, fighter_class, classes, published=False, live=live)
    snapshot = published.snapshot
    narrowed = published.cage_table(entrant_type, fighter_class)
    table = narrowed.table
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
        scale=narrowed.scale,
        group_scale=narrowed.group_scale,
        head_to_head=narrowed.head_to_head,
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
    published = await _newest(platform, Arena.EDGEARENA)
    if published is None:
        return EdgeBoard(published=False)
    snapshot = published.snapshot
    # The page's sections go in the roles' order: the table is paged in that order too.
    rows = published.edge_rows()
    start, end = _window(cursor, snapshot.computed_at, page_size)
    shown = rows[start:end]
    roles = [
        (role, [r for r in shown if r.get("role") == role])
        for role in ROLES
        if any(r.get("role") == role for r in shown)
        or (start == 0 and not published.edge_has(role))
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
