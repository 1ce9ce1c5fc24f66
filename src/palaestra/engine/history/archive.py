"""Archive files: rows written to Parquet in the dataset's format, complete before they count.

A file is written under a ``.partial`` name, a row group per batch, and renamed once
closed; only then is it logged (:class:`~palaestra.store.archives.HistoryArchive`) and
are its rows removed. A pass cut short leaves at most a ``.partial`` file, which the
next pass writes again from the start: no row is ever in two logged files.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from palaestra.engine.export.records import SCHEMA_VERSION
from palaestra.engine.export.writers import ParquetUnavailable
from palaestra.files import private_dir
from palaestra.store.archives import ArchiveKind

__all__ = ["ArchiveFile", "read_archive"]

_PARTIAL = ".partial"


class ArchiveFile:
    """One Parquet file of ``kind`` under ``root/<kind>/``, written a batch at a time."""

    def __init__(self, root: Path, kind: ArchiveKind, stem: str) -> None:
        try:
            from palaestra.engine.export.parquet import ParquetWriter
        except ImportError:
            raise ParquetUnavailable from None
        folder = root / kind.value
        private_dir(folder)
        self.relative = f"{kind.value}/{stem}.parquet"
        self.path = root / self.relative
        self.rows = 0
        self._writer = ParquetWriter(folder, kind.value, file_name=f"{stem}.parquet{_PARTIAL}")

    async def __aenter__(self) -> ArchiveFile:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, *_: object) -> None:
        """A pass that fails while writing leaves no partial file behind (a process that
        dies does: the next pass writes the same file again)."""
        if kind is not None:
            await self.discard()

    async def write(
        self, rows: Sequence[Any], record: Callable[[Any], dict[str, Any]] | None = None
    ) -> None:
        """Append ``rows`` as one row group; ``record`` turns each into the file's record.
        Both happen on a worker thread, so the event loop stays free for the arena."""
        if not rows:
            return

        def work() -> None:
            made = (record(r) if record is not None else r for r in rows)
            self._writer.write([{"schema_version": SCHEMA_VERSION, **r} for r in made])

        await asyncio.to_thread(work)
        self.rows += len(rows)

    async def close(self) -> None:
        """Close, flush to disk and give the file its final name."""

        def finish() -> None:
            self._writer.close()
            with open(self._writer.path, "rb") as written:
                os.fsync(written.fileno())
            os.replace(self._writer.path, self.path)

        await asyncio.to_thread(finish)

    async def discard(self) -> None:
        def drop() -> None:
            with contextlib.suppress(Exception):  # already closed, or broken
                self._writer.close()
            self._writer.path.unlink(missing_ok=True)

        await asyncio.to_thread(drop)


def read_archive(path: Path) -> list[dict[str, Any]]:
    """The rows of one archive file, as dicts (JSON fields as JSON text)."""
    import pyarrow.parquet as pq

    return list(pq.read_table(path).to_pylist())
