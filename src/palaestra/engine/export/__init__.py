"""The public dataset: matches and runs as JSON Lines, or Parquet with the ``parquet`` extra.

- ``dataset``: the export itself, and its manifest;
- ``records``: the records, built from named columns and scrubbed of secrets;
- ``writers``: a writer per format, behind one small interface;
- ``parquet``: the Parquet writer, loaded only when asked for.
"""

from __future__ import annotations

from palaestra.engine.export.dataset import ExportSummary, export_dataset
from palaestra.engine.export.records import CREDENTIAL_KEYS, JSON_TEXT_FIELDS, SCHEMA_VERSION, scrub
from palaestra.engine.export.writers import ExportFormat, ParquetUnavailable

__all__ = [
    "CREDENTIAL_KEYS",
    "JSON_TEXT_FIELDS",
    "SCHEMA_VERSION",
    "ExportFormat",
    "ExportSummary",
    "ParquetUnavailable",
    "export_dataset",
    "scrub",
]
