"""The dataset's file writers, one per format, chosen by :func:`writer_for`.

JSON Lines needs nothing extra. Parquet needs ``pyarrow``
(``pip install 'palaestra[parquet]'``), imported only when Parquet is asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

import orjson

from palaestra.errors import PalaestraError
from palaestra.files import private_writer

__all__ = [
    "ExportFormat",
    "JsonlWriter",
    "ParquetUnavailable",
    "RecordWriter",
    "WriterFactory",
    "writer_for",
]


class ExportFormat(StrEnum):
    JSONL = "jsonl"
    PARQUET = "parquet"


class ParquetUnavailable(PalaestraError):
    """Parquet export needs pyarrow: pip install 'palaestra[parquet]'."""


class RecordWriter(Protocol):
    """One file of the dataset (``path``), written a page of records at a time."""

    path: Path
    count: int

    def write(self, records: Sequence[dict[str, Any]]) -> None: ...

    def close(self) -> None: ...


#: Opens the writer of one file: ``(directory, name)``, name being "matches" or "runs".
WriterFactory = Callable[[Path, str], RecordWriter]


class JsonlWriter:
    """One JSON object per line."""

    def __init__(self, directory: Path, name: str) -> None:
        self.path = directory / f"{name}.jsonl"
        self.count = 0
        self._file = private_writer(self.path)

    def write(self, records: Sequence[dict[str, Any]]) -> None:
        self._file.write(b"".join(orjson.dumps(r) + b"\n" for r in records))
        self.count += len(records)

    def close(self) -> None:
        self._file.close()


def writer_for(fmt: ExportFormat) -> WriterFactory:
    """The writer of ``fmt``; raises :class:`ParquetUnavailable` when pyarrow is missing."""
    if fmt is ExportFormat.JSONL:
        return JsonlWriter
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise ParquetUnavailable from None
    from palaestra.engine.export.parquet import ParquetWriter

    return ParquetWriter
