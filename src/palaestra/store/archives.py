"""The archive log: which Parquet file holds which range of history, and when it was removed."""

from __future__ import annotations

from enum import StrEnum

from sqlalchemy import BigInteger, Float, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from palaestra.store.models import Base

__all__ = ["ArchiveKind", "HistoryArchive"]


class ArchiveKind(StrEnum):
    """What a file of the archive holds."""

    #: Raw agent events whose ``at`` falls in the file's range.
    AGENT_EVENTS = "agent_events"
    #: Tasks' payloads and outputs, of the runs that finished in the file's range.
    TASK_BODIES = "task_bodies"
    #: Receipts of accepted async completions, received in the file's range.
    COMPLETION_RECEIPTS = "completion_receipts"


class HistoryArchive(Base):
    """One archive file: the rows of ``kind`` whose time falls in
    [first_at, until_at] (task bodies: of the runs that finished in [first_at, until_at)).

    Written once the file is complete on disk; ``removed_at`` is set once the rows it holds
    are gone from the database (dropped, deleted or cleared), so that a pass cut short
    resumes the removal of a file already written instead of writing it again.
    """

    __tablename__ = "history_archives"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    kind: Mapped[str] = mapped_column(String(32))
    first_at: Mapped[float] = mapped_column(Float)
    until_at: Mapped[float] = mapped_column(Float)
    rows: Mapped[int] = mapped_column(BigInteger)
    #: The table the rows were read from (a day partition is dropped whole; any other
    #: table loses the rows one batch at a time), and for events the ids they span.
    source: Mapped[str] = mapped_column(String(64))
    first_id: Mapped[int | None] = mapped_column(BigInteger)
    last_id: Mapped[int | None] = mapped_column(BigInteger)
    #: The file, relative to the archive folder (``archive_dir``).
    file: Mapped[str] = mapped_column(Text)
    archived_at: Mapped[float] = mapped_column(Float)
    removed_at: Mapped[float | None] = mapped_column(Float)

    __table_args__ = (Index("ix_history_archives_kind_until", "kind", "until_at"),)
