"""Ratings in the terminal: ``leaderboard``, ``export`` and ``matchmaking``.

Each reads and writes the configured database directly (the embedded SQLite
in the data folder by default, or ``PALAESTRA_DATABASE_URL``), so no server
needs to be running; beside a running server on the same database they see
what it sees.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from palaestra.cli.app import app
from palaestra.cli.common import fail, load_settings, on_platform
from palaestra.engine.cage import matchmaker
from palaestra.engine.export.dataset import export_dataset
from palaestra.engine.export.writers import ExportFormat, ParquetUnavailable
from palaestra.engine.ratings import leaderboard as boards
from palaestra.engine.ratings.live import rate_pending
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena

__all__ = ["export", "leaderboard", "matchmaking", "parse_since", "with_platform"]

T = TypeVar("T")


def with_platform(work: Callable[[Platform], Awaitable[T]]) -> T:
    return on_platform(load_settings(), work)


def parse_since(text: str) -> float:
    """Unix seconds, or an ISO 8601 date or time (UTC unless it names an offset)."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise typer.BadParameter(
            "expected unix seconds or an ISO 8601 date/time, e.g. 2026-01-01"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


# -- leaderboard -----------------------------------------------------------------------------


@app.command()
def leaderboard(
    arena: Annotated[str, typer.Option(help="cage or edgearena.")] = Arena.CAGE.value,
    entrant_type: Annotated[
        str | None, typer.Option("--entrant-type", help="cage: harness, model or house.")
    ] = None,
    fighter_class: Annotated[str | None, typer.Option("--class", help="cage: a class.")] = None,
    role: Annotated[str | None, typer.Option(help="edgearena: SCOUT, BUILDER or ANALYST.")] = None,
    recompute: Annotated[
        bool,
        typer.Option(
            "--recompute", help="Apply newly scored matches and publish a fresh leaderboard first."
        ),
    ] = False,
    limit: Annotated[int, typer.Option(help="Rows shown per table.", min=1)] = 50,
) -> None:
    """Print the published leaderboard (and, for cage, the live ratings) from the database.

    Scored matches not yet rated are applied to the live ratings first; the
    published table is the latest snapshot (computed now if there is none).
    """

    async def work(platform: Platform) -> dict[str, Any]:
        await rate_pending(platform)  # idempotent: what no server has rated yet
        if recompute:
            try:
                chosen = Arena(arena)
            except ValueError:
                fail("arena must be cage or edgearena")
            await boards.recompute(platform, chosen)
        # cage: the first `limit` rows of each table are read (the live table pages);
        # edgearena: the whole table, shown `limit` rows per role.
        return await boards.view(
            platform,
            arena,
            entrant_type=entrant_type,
            fighter_class=fighter_class,
            role=role,
            limit=limit if arena == Arena.CAGE.value else None,
        )

    board = with_platform(work)
    console = Console()
    if board["arena"] == Arena.EDGEARENA:
        _print_agents(console, board, limit)
    else:
        _print_cage(console, board, limit)
    computed = datetime.fromtimestamp(board["computed_at"], UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    counted = "scored matches" if board["arena"] == Arena.CAGE else "finished tasks"
    console.print(f"computed {computed} over {board['match_count']:,} {counted}", style="dim")


def _interval(value: Mapping[str, float] | None) -> str:
    if value is None:
        return "-"
    return f"{value['value']:+.2f} [{value['low']:+.2f}, {value['high']:+.2f}]"


def _print_cage(console: Console, board: Mapping[str, Any], limit: int) -> None:
    method = board["method"]
    table = Table(
        title="cage.v1: published ratings (Bradley-Terry, log-odds vs the average fighter)",
        caption=f"95% bootstrap intervals over {method.get('resamples', 0):,} resamples; "
        "rank = 1 + fighters whose interval lies wholly above",
    )
    for column in ("rank", "fighter", "type", "class", "overall", "attack", "defence", "A/D"):
        table.add_column(column, justify="right" if column in ("rank", "A/D") else "left")
    for row in board["fighters"][:limit]:
        table.add_row(
            *_fighter_cells(row),
            row["class"] or "-",
            _interval(row["overall"]),
            _interval(row["attack"]),
            _interval(row["defence"]),
            f"{row['matches']['attack']}/{row['matches']['defence']}",
        )
    console.print(table)
    if board["summary"]:
        summary = Table(title="entrant types: mean strength, 95% intervals")
        for column in ("type", "fighters", "overall", "attack", "defence"):
            summary.add_column(column)
        for group in board["summary"]:
            summary.add_row(
                group["group"],
                str(group["fighters"]),
                _interval(group["overall"]),
                _interval(group["attack"]),
                _interval(group["defence"]),
            )
        for difference in board["differences"]:
            summary.add_row(
                f"{difference['first']} - {difference['second']}",
                "",
                _difference(difference["overall"]),
                _difference(difference["attack"]),
                _difference(difference["defence"]),
            )
        console.print(summary)
    live = Table(
        title="cage.v1: live ratings (OpenSkill), ordered by the conservative estimate",
        caption="score = mean of (mu - 3 sigma) over attack and defence; W-D-L per side",
    )
    for column in ("rank", "fighter", "type", "score", "attack mu±sigma", "defence mu±sigma"):
        live.add_column(column, justify="right" if column in ("rank", "score") else "left")
    for row in board["live"][:limit]:
        live.add_row(
            *_fighter_cells(row),
            f"{row['score']:.1f}",
            _live(row["attack"]),
            _live(row["defence"]),
        )
    console.print(live)


def _fighter_cells(row: Mapping[str, Any]) -> tuple[str, str, str]:
    """The rank, name and entrant type a fighter's row opens with, in either table."""
    return str(row["rank"]), row["name"], row["entrant_type"] or "-"


def _difference(value: Mapping[str, float]) -> str:
    clear = value["low"] > 0 or value["high"] < 0
    return _interval(value) + (" *" if clear else "")


def _live(side: Mapping[str, Any]) -> str:
    record = f"{side['wins']}-{side['draws']}-{side['losses']}"
    return f"{side['mu']:.1f}±{side['sigma']:.1f}  {record}"


def _print_agents(console: Console, board: Mapping[str, Any], limit: int) -> None:
    by_role: dict[str, list[Mapping[str, Any]]] = {}
    for row in board["agents"]:
        by_role.setdefault(row["role"], []).append(row)
    if not by_role:
        console.print("no edgearena agents yet")
    for role, rows in by_role.items():
        table = Table(title=f"edgearena: {role or '(no role)'} agents by reputation")
        for column in (
            "rank",
            "agent",
            "status",
            "reputation",
            "tasks",
            "validity [95%]",
            "p50 ms",
            "p90 ms",
            "contribution",
        ):
            table.add_column(column)
        for row in rows[:limit]:
            table.add_row(
                str(row["rank"]),
                row["name"],
                row["status"],
                f"{row['reputation']:.3f}",
                str(row["tasks"]),
                _share(row["validity_rate"], row["validity_low"], row["validity_high"]),
                _number(row["latency_p50_ms"]),
                _number(row["latency_p90_ms"]),
                _contribution(row["contribution_mean"], row["contribution_total"]),
            )
        console.print(table)


def _share(rate: float | None, low: float | None, high: float | None) -> str:
    if rate is None or low is None or high is None:
        return "-"
    return f"{rate:.0%} [{low:.0%}, {high:.0%}]"


def _number(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:,.0f}"


def _contribution(mean: float | None, total: float) -> str:
    return "-" if mean is None else f"{mean:.2f} (sum {total:.1f})"


# -- export ----------------------------------------------------------------------------------


@app.command()
def export(
    out: Annotated[Path, typer.Option("--out", help="Folder to write the dataset into.")] = Path(
        "dataset"
    ),
    since: Annotated[
        str | None,
        typer.Option(help="Only what finished at or after this: ISO 8601 date/time or unix s."),
    ] = None,
    fmt: Annotated[
        ExportFormat, typer.Option("--format", help="jsonl, or parquet (needs palaestra[parquet]).")
    ] = ExportFormat.JSONL,
) -> None:
    """Write finished matches and runs as a documented dataset (docs/dataset.md); no secrets."""
    start = parse_since(since) if since is not None else None
    if fmt is ExportFormat.PARQUET:
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            fail(ParquetUnavailable().message)

    async def work(platform: Platform) -> Any:
        return await export_dataset(platform, out, since=start, fmt=fmt)

    summary = with_platform(work)
    typer.echo(
        f"wrote {summary.matches:,} matches and {summary.runs:,} runs to {summary.directory} "
        f"({', '.join(summary.files)})"
    )


# -- matchmaking -----------------------------------------------------------------------------


@app.command()
def matchmaking(
    pause: Annotated[bool, typer.Option("--pause", help="Stop scheduling new matches.")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="Schedule matches again.")] = False,
) -> None:
    """Show, pause or resume the matchmaker (for every server on this database)."""
    if pause and resume:
        fail("--pause and --resume exclude each other")

    async def work(platform: Platform) -> matchmaker.MatchmakingState:
        if pause or resume:
            return await matchmaker.set_paused(platform, pause)
        return await matchmaker.matchmaking_state(platform)

    state = with_platform(work)
    if state.enabled:
        typer.echo("matchmaking: enabled")
    else:
        typer.echo("matchmaking: disabled (PALAESTRA_MATCHMAKING_ENABLED=true turns it on)")
    typer.echo(f"pause switch: {'paused' if state.paused else 'off'}")
    typer.echo(f"scheduling now: {'yes' if state.scheduling else 'no'}")
    typer.echo(f"open matches: {state.open_matches}")
