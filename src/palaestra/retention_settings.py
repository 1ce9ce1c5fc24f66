"""The settings of history retention: how long raw history is kept, and how it is archived.

Held apart from :mod:`palaestra.settings` (which includes them in the one settings
object, :class:`~palaestra.settings.Settings`) so that each module stays one concern.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from pydantic import Field, ValidationInfo, field_validator
from pydantic_settings import BaseSettings

__all__ = ["MAX_RETENTION_DAYS", "RetentionSettings"]

#: The longest window a retention setting takes (ten years); 0 keeps for ever.
MAX_RETENTION_DAYS: Final = 3650


class RetentionSettings(BaseSettings):
    """How long raw history is kept before it is archived to Parquet and removed."""

    retention_events_days: int = Field(
        default=30,
        description="Days raw agent events (pings, wizard checks, dispatches, status changes) "
        "are kept; older ones are archived to Parquet files in the archive folder, then "
        "removed (whole days at a time). 0 keeps them for ever.",
    )
    retention_task_bodies_days: int = Field(
        default=90,
        description="Days after a run finished that its tasks keep their payloads and outputs; "
        "then both are archived to Parquet and cleared (the tasks themselves stay, and their "
        "pages say where the bodies went). 0 keeps them for ever.",
    )
    retention_receipts_days: int = Field(
        default=90,
        description="Days the receipts of accepted async completions (the callback a task's "
        "page shows: when it came, with which signature) are kept; older ones are archived to "
        "Parquet, then removed (whole days at a time). A receipt guards against a replayed "
        "completion only while the signature's timestamp is fresh (five minutes): any window "
        "keeps that guard. 0 keeps them for ever.",
    )
    retention_web_sessions_days: int = Field(
        default=1,
        description="Days a browser session's row is kept after the session expired; then it "
        "is deleted, with nothing archived (an expired session signs nobody in). 0 keeps them "
        "for ever.",
    )
    retention_leaderboard_snapshots: int = Field(
        default=10,
        ge=1,
        le=10_000,
        description="Published leaderboards kept per arena: each publication deletes the older "
        "ones, with nothing archived (a leaderboard is computed again from the matches and "
        "tasks, which are kept). The rated-match records (each rated match's ratings before "
        "and after) are kept for ever: they mark a match as applied to the live ratings.",
    )
    retention_batch_rows: int = Field(
        default=5000,
        ge=100,
        le=100_000,
        description="Rows the retention job reads, archives or removes per transaction; "
        "smaller batches hold locks for less time.",
    )
    retention_pause_s: float = Field(
        default=0.05,
        ge=0,
        le=10,
        description="Seconds the retention job waits between two batches, leaving the "
        "database to the arena.",
    )
    retention_interval_s: float = Field(
        default=3600.0,
        ge=60,
        description="Seconds between two passes of the retention job (once across the "
        "cluster); each pass also creates the event partitions of the coming days on "
        "PostgreSQL.",
    )
    retention_partitions_ahead_days: int = Field(
        default=7,
        ge=2,
        le=90,
        description="Daily partitions of agent events created ahead of time on PostgreSQL; "
        "events outside every partition land in a default partition, never refused.",
    )
    archive_dir: Path | None = Field(
        default=None,
        description="Folder of the retention job's Parquet archives; default: "
        "<data_dir>/archive. Keep it as private as the database: archives hold rows as "
        "they were.",
    )

    @field_validator(
        "retention_events_days",
        "retention_task_bodies_days",
        "retention_receipts_days",
        "retention_web_sessions_days",
    )
    @classmethod
    def _days(cls, value: int, info: ValidationInfo) -> int:
        if not 0 <= value <= MAX_RETENTION_DAYS:
            name = f"PALAESTRA_{(info.field_name or '').upper()}"
            raise ValueError(
                f"{name} is {value}: give a number of days from 1 to {MAX_RETENTION_DAYS}, "
                "or 0 to keep for ever"
            )
        return value
