"""The dataset: finished matches and runs, versioned and documented, without a single secret.

``export_dataset`` writes a folder::

    manifest.json                    schema version, time, filter, counts, files
    matches.jsonl | matches.parquet  one record per finished cage.v1 match
    runs.jsonl    | runs.parquet     one record per finished edgearena run

``docs/dataset.md`` describes every field; a test keeps the two in step.

Only finished work is exported: matches that are SCORED or VOIDED (a
match's material is secret until it ends) and runs that are COMPLETED or
FAILED. Records are built from named columns, never from whole rows, so the
credentials of the platform cannot leak into them: no API key, claim code,
provider key, owner token, nor any hash or sealed form of one; no endpoint
URL or provider base URL (either may carry credentials); no owner id. Free-
form JSON (turn findings, task payloads and outputs, run configuration and
report, candidates' scout output, match material) also loses every object key
named like a credential (:data:`CREDENTIAL_KEYS`).

Parquet needs ``pyarrow`` (``pip install 'palaestra[parquet]'``); there, the
free-form JSON fields are stored as JSON text (:data:`JSON_TEXT_FIELDS`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from palaestra.engine.export.records import (
    JSON_TEXT_FIELDS,
    SCHEMA_VERSION,
    match_records,
    run_records,
)
from palaestra.engine.export.writers import ExportFormat, writer_for
from palaestra.files import private_dir, private_writer
from palaestra.platform import Platform

__all__ = [
    "ExportSummary",
    "export_dataset",
]


@dataclass(frozen=True, slots=True)
class ExportSummary:
    directory: Path
    format: ExportFormat
    matches: int
    runs: int
    files: list[str] = field(default_factory=list)


async def export_dataset(
    platform: Platform,
    directory: Path,
    *,
    since: float | None = None,
    fmt: ExportFormat = ExportFormat.JSONL,
) -> ExportSummary:
    """Write the dataset into ``directory`` (created if needed); ``since``: finished at or after."""
    open_writer = writer_for(fmt)
    await asyncio.to_thread(private_dir, directory)
    counts = {}
    files = []
    for name, records in (
        ("matches", match_records(platform, since)),
        ("runs", run_records(platform, since)),
    ):
        writer = open_writer(directory, name)
        try:
            async for page in records:
                writer.write(page)
        finally:
            writer.close()
        counts[name] = writer.count
        files.append(writer.path.name)
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "generated_at": platform.clock.now(),
        "since": since,
        "format": fmt.value,
        "counts": counts,
        "files": files,
        "json_text_fields": JSON_TEXT_FIELDS if fmt is ExportFormat.PARQUET else {},
        "documentation": "docs/dataset.md",
    }
    with private_writer(directory / "manifest.json") as out:
        out.write(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    return ExportSummary(
        directory, fmt, counts["matches"], counts["runs"], ["manifest.json", *files]
    )
