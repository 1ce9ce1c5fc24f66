"""The Parquet side of the dataset export (needs ``pyarrow``: ``palaestra[parquet]``).

The schemas are written out, not inferred, so that every file of a schema
version has the same column types whatever its rows hold. Free-form JSON
fields become JSON text (see ``JSON_TEXT_FIELDS`` in :mod:`palaestra.engine.export.records`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from palaestra.engine.export.records import ARCHIVE_JSON_TEXT_FIELDS, JSON_TEXT_FIELDS
from palaestra.files import private_writer

__all__ = ["SCHEMAS", "ParquetWriter"]

_TEXT = pa.string()
_FLOAT = pa.float64()
_INT = pa.int64()

_ENTRANT = pa.struct(
    [
        ("fighter_id", _TEXT),
        ("name", _TEXT),
        ("entrant_type", _TEXT),
        ("class", _TEXT),
        ("harness_name", _TEXT),
        ("model", _TEXT),
        ("sandbox_attested", pa.bool_()),
        ("executor", _TEXT),
    ]
)
_RATING = pa.struct([("mu", _FLOAT), ("sigma", _FLOAT)])
_TURN = pa.struct(
    [
        ("turn", _INT),
        ("side", _TEXT),
        ("fighter_id", _TEXT),
        ("status", _TEXT),
        ("payload", _TEXT),
        ("message", _TEXT),
        ("reason", _TEXT),
        ("latency_ms", _FLOAT),
        ("findings", _TEXT),
        ("producer", _TEXT),
        ("model_id", _TEXT),
        ("started_at", _FLOAT),
        ("finished_at", _FLOAT),
    ]
)
_CANDIDATE = pa.struct(
    [
        ("candidate_id", _TEXT),
        ("source_task_id", _TEXT),
        ("title", _TEXT),
        ("status", _TEXT),
        ("phase", _TEXT),
        ("shortlist_score", _FLOAT),
        ("final_score", _FLOAT),
        ("rank", _INT),
        ("scout_output", _TEXT),
    ]
)
_TASK = pa.struct(
    [
        ("task_id", _TEXT),
        ("candidate_id", _TEXT),
        ("phase", _TEXT),
        ("slot", _INT),
        ("attempt", _INT),
        ("agent_id", _TEXT),
        ("agent_role", _TEXT),
        ("executor", _TEXT),
        ("status", _TEXT),
        ("via", _TEXT),
        ("dispatched_at", _FLOAT),
        ("deadline_at", _FLOAT),
        ("completed_at", _FLOAT),
        ("latency_ms", _FLOAT),
        ("prompt_tokens", _INT),
        ("completion_tokens", _INT),
        ("model_id", _TEXT),
        ("producer", _TEXT),
        ("reason", _TEXT),
        ("contribution", _FLOAT),
        ("payload", _TEXT),
        ("output", _TEXT),
    ]
)

SCHEMAS: dict[str, pa.Schema] = {
    "matches": pa.schema(
        [
            ("schema_version", _TEXT),
            ("match_id", _TEXT),
            ("ruleset", _TEXT),
            ("kind", _TEXT),
            ("status", _TEXT),
            ("outcome", _TEXT),
            ("decided_by", _TEXT),
            ("void_reason", _TEXT),
            ("created_at", _FLOAT),
            ("finished_at", _FLOAT),
            ("attacker", _ENTRANT),
            ("defender", _ENTRANT),
            ("baseline_played", pa.bool_()),
            ("material", _TEXT),
            ("turns", pa.list_(_TURN)),
            (
                "ratings",
                pa.struct(
                    [
                        ("result", _TEXT),
                        ("attack_before", _RATING),
                        ("attack_after", _RATING),
                        ("defence_before", _RATING),
                        ("defence_after", _RATING),
                    ]
                ),
            ),
        ]
    ),
    "runs": pa.schema(
        [
            ("schema_version", _TEXT),
            ("run_id", _TEXT),
            ("goal", _TEXT),
            ("launchpad", _TEXT),
            ("status", _TEXT),
            ("phase", _TEXT),
            ("error", _TEXT),
            ("created_at", _FLOAT),
            ("finished_at", _FLOAT),
            ("config", _TEXT),
            ("report", _TEXT),
            ("candidates", pa.list_(_CANDIDATE)),
            ("tasks", pa.list_(_TASK)),
        ]
    ),
    # The retention job's archives (``palaestra.engine.history``): rows as they were.
    "agent_events": pa.schema(
        [
            ("schema_version", _TEXT),
            ("event_id", _INT),
            ("agent_id", _TEXT),
            ("at", _FLOAT),
            ("kind", _TEXT),
            ("outcome", _TEXT),
            ("latency_ms", _FLOAT),
            ("reason", _TEXT),
            ("detail", _TEXT),
        ]
    ),
    "task_bodies": pa.schema(
        [
            ("schema_version", _TEXT),
            ("run_id", _TEXT),
            ("run_finished_at", _FLOAT),
            *((f.name, f.type) for f in _TASK),
            ("request_headers", _TEXT),  # the signed headers the POST carried, as JSON
        ]
    ),
    "completion_receipts": pa.schema(
        [
            ("schema_version", _TEXT),
            ("task_id", _TEXT),
            ("signature", _TEXT),
            ("received_at", _FLOAT),
        ]
    ),
}


_TEXT_FIELDS = {**JSON_TEXT_FIELDS, **ARCHIVE_JSON_TEXT_FIELDS}


def _json_text(value: Any) -> str | None:
    """A free-form JSON field as Parquet stores it."""
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _as_text(record: dict[str, Any], path: str) -> None:
    """Turn the field at ``path`` (``a`` or ``a[].b``) into JSON text, in place."""
    if "[]." in path:
        outer, inner = path.split("[].", 1)
        for item in record.get(outer) or []:
            _as_text(item, inner)
        return
    record[path] = _json_text(record.get(path))


class ParquetWriter:
    """One row group per page of records: a RecordWriter for Parquet."""

    def __init__(self, directory: Path, name: str, *, file_name: str | None = None) -> None:
        """Write ``directory``/``file_name`` (default ``<name>.parquet``) in schema ``name``."""
        self.name = name
        self.path = directory / (file_name or f"{name}.parquet")
        self.count = 0
        self.schema = SCHEMAS[name]
        self._file = private_writer(self.path)
        self._writer = pq.ParquetWriter(self._file, self.schema)

    def write(self, records: Sequence[dict[str, Any]]) -> None:
        rows = [dict(r) for r in records]
        for row in rows:
            for path in _TEXT_FIELDS[self.name]:
                _as_text(row, path)
        self._writer.write_table(pa.Table.from_pylist(rows, schema=self.schema))
        self.count += len(rows)

    def close(self) -> None:
        self._writer.close()
        self._file.close()
