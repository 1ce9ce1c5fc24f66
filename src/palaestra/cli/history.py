"""``palaestra retention``: what history is kept, what is archived and when; and a pass now.

Reads (and with ``--run-now`` rolls up the closed hours, then archives and removes, as the
server's own jobs do) the
configured database directly: no server needs to be running, and one running on the
same database is not disturbed (one pass runs at a time, by a lease).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer

from palaestra.cli.app import app
from palaestra.cli.ratings import with_platform
from palaestra.engine.history.passes import PassReport
from palaestra.engine.history.retention import build_retention
from palaestra.engine.history.rollups import roll_up_history, summarised_until
from palaestra.engine.history.status import KindStatus, RetentionStatus, retention_status
from palaestra.platform import Platform
from palaestra.store.archives import ArchiveKind

__all__ = ["retention"]

#: Per kind: its name, what its rows are, and what a pass does ({days}, {day} filled in).
_WHAT = {
    ArchiveKind.AGENT_EVENTS: (
        "agent events",
        "events",
        "kept {days} days; events older than {day} are archived, then removed, at the next pass",
    ),
    ArchiveKind.TASK_BODIES: (
        "task payloads and outputs",
        "tasks",
        "kept {days} days after their run finished; those of runs finished before {day} are "
        "archived, then cleared (the tasks stay), at the next pass",
    ),
    ArchiveKind.COMPLETION_RECEIPTS: (
        "completion receipts (the callbacks task pages show)",
        "receipts",
        "kept {days} days; receipts received before {day} are archived, then removed, at the "
        "next pass",
    ),
}


def _day(at: float | None) -> str:
    return "-" if at is None else datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d")


def _moment(at: float | None) -> str:
    return "-" if at is None else datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")


@app.command()
def retention(
    run_now: Annotated[
        bool,
        typer.Option(
            "--run-now",
            help="Run one pass now: roll up the closed hours, then archive and remove what is due.",
        ),
    ] = False,
) -> None:
    """Say what history is kept, what is archived and when (with --run-now, do it now)."""

    async def work(platform: Platform) -> tuple[PassReport | None, RetentionStatus, float]:
        report = None
        if run_now:  # raw events wait for the roll-ups: close what has closed first
            while await roll_up_history(platform):
                pass
            report = await build_retention(platform).run_once()
        async with platform.db.session() as session:
            summarised = await summarised_until(session)
        return report, await retention_status(platform), summarised

    report, status, summarised = with_platform(work)
    if report is not None:
        for line in _report_lines(report):
            typer.echo(line)
    for line in status_lines(status):
        typer.echo(line)
    closed = f"closed until {_moment(summarised)}" if summarised else "nothing rolled up yet"
    typer.echo(
        f"roll-ups: {closed}; raw events after that are kept until the roll-up job has summed "
        "them, whatever their age"
    )


def _report_lines(report: PassReport) -> list[str]:
    if report.skipped:
        return ["pass: skipped, another runner is passing now (it holds the lease)", ""]
    lines = [
        f"pass: archived {report.events_archived:,} events and removed {report.events_removed:,}; "
        f"archived the bodies of {report.task_bodies_archived:,} tasks and cleared "
        f"{report.task_bodies_cleared:,}",
        f"  archived {report.receipts_archived:,} completion receipts and removed "
        f"{report.receipts_removed:,}; deleted {report.web_sessions_deleted:,} expired browser "
        f"sessions and the hourly roll-ups of {report.rollup_hours_pruned:,} hours (their days' "
        "stay)",
    ]
    if report.partitions_created or report.partitions_dropped:
        lines.append(
            f"  partitions: {len(report.partitions_created)} made ahead, "
            f"{len(report.partitions_dropped)} dropped"
        )
    lines += [f"  wrote {file}" for file in report.files]
    if report.pages_vacuumed:
        lines.append(f"  gave {report.pages_vacuumed:,} free pages back to the file system")
    lines += [f"  left for the next pass: {why}" for why in report.deferred]
    return [*lines, ""]


def status_lines(status: RetentionStatus) -> list[str]:
    """The status as the command prints it."""
    lines = [
        f"history retention: a pass every {status.interval_s:g} s; archives in {status.archive_dir}"
    ]
    for kind in status.kinds:
        lines += _kind_lines(kind)
    lines.append("  match turns: kept for ever (the judge re-reads them; the dataset carries them)")
    if status.web_sessions_days:
        lines.append(
            f"  browser sessions: deleted {status.web_sessions_days} days after they expired "
            "(nothing archived: an expired session signs nobody in)"
        )
    else:
        lines.append("  browser sessions: kept for ever, expired ones too (the window is 0)")
    lines.append(
        f"  published leaderboards: the latest {status.leaderboard_snapshots} per arena "
        "(older ones deleted as each is published; computed again from the matches and tasks)"
    )
    lines.append(
        "  rated-match records (ratings before and after each rated match): kept for ever "
        "(they mark a match as applied to the live ratings)"
    )
    lines.append(f"  oldest agent event kept: {_moment(status.oldest_event_at)}")
    lines.append(_store_line(status))
    if status.recent:
        lines.append("latest archive files:")
        for entry in status.recent:
            state = "removed" if entry.removed_at is not None else "removal pending"
            lines.append(
                f"  {_moment(entry.archived_at)}  {entry.file}  {entry.rows:,} rows  ({state})"
            )
    return lines


def _kind_lines(kind: KindStatus) -> list[str]:
    name, unit, rule = _WHAT[kind.kind]
    if kind.window_days == 0:
        kept = f"  {name}: kept for ever (the window is 0)"
    else:
        kept = f"  {name}: " + rule.format(days=kind.window_days, day=_day(kind.next_cut))
    if kind.files == 0:
        return [kept, "    archived: nothing yet"]
    archived = (
        f"    archived: {kind.files:,} files, {kind.rows:,} {unit}, from {_day(kind.first_at)} "
        f"to {_day(kind.last_at)}; last on {_moment(kind.last_archived_at)}"
    )
    lines = [kept, archived]
    if kind.unfinished:
        lines.append(f"    {kind.unfinished} files archived whose removal the next pass finishes")
    return lines


def _store_line(status: RetentionStatus) -> str:
    if status.store == "sqlite":
        if status.auto_vacuum == "incremental":
            return "store: SQLite, incremental auto-vacuum: freed pages go back to the file system"
        return (
            f"store: SQLite, auto_vacuum={status.auto_vacuum}: removed history's pages are reused "
            "but the file does not shrink; to switch, stop palaestra and run once: "
            f"sqlite3 {status.database_file} 'PRAGMA auto_vacuum=INCREMENTAL; VACUUM;'"
        )
    if not status.partitions:
        return "store: PostgreSQL, agent_events not partitioned (run `palaestra migrate`)"
    first, last = status.partitions[0], status.partitions[-1]
    return (
        f"store: PostgreSQL, agent_events in {len(status.partitions)} daily partitions from "
        f"{_day(first.first_at)} to {_day(last.first_at)}; default partition: "
        f"{status.default_partition_rows:,} events"
    )
