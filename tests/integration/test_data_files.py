"""The arena's data files are its operator's alone: the SQLite database with its log and
shared memory, the data folder, and exports, 0600 (folders 0700) whatever the umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from palaestra.engine.export.dataset import export_dataset
from palaestra.engine.export.writers import ExportFormat
from palaestra.platform import Platform
from palaestra.store.db import Database

pytestmark = pytest.mark.asyncio


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture(autouse=True)
def open_umask() -> Iterator[None]:
    """The common umask, under which files are created readable by everyone (0644)."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


async def write_something(database: Database) -> None:
    async with database.engine.begin() as connection:
        await connection.execute(text("CREATE TABLE IF NOT EXISTS probe (x INTEGER)"))
        await connection.execute(text("INSERT INTO probe VALUES (1)"))


async def test_a_new_sqlite_database_and_its_log_are_0600(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    database = Database(f"sqlite+aiosqlite:///{folder / 'palaestra.db'}")
    try:
        await database.migrate()
        await write_something(database)
        files = {path.name: mode(path) for path in folder.iterdir()}
    finally:
        await database.dispose()
    assert files == {
        "palaestra.db": 0o600,
        "palaestra.db-wal": 0o600,
        "palaestra.db-shm": 0o600,
    }
    assert mode(folder) == 0o700


async def test_files_an_older_version_left_readable_are_narrowed(tmp_path: Path) -> None:
    path = tmp_path / "palaestra.db"
    first = Database(f"sqlite+aiosqlite:///{path}")
    await first.migrate()
    await write_something(first)
    await first.dispose()
    os.chmod(path, 0o644)
    wal = tmp_path / "palaestra.db-wal"
    wal.write_bytes(b"")
    os.chmod(wal, 0o644)
    again = Database(f"sqlite+aiosqlite:///{path}")
    try:
        assert mode(path) == 0o600
        assert mode(wal) == 0o600
        await write_something(again)
    finally:
        await again.dispose()


async def test_the_generated_secret_key_and_its_folder_are_private(tmp_path: Path) -> None:
    from palaestra.settings import Settings

    settings = Settings(_env_file=None, data_dir=tmp_path / "fresh")
    settings.ensure_secret_key()
    assert mode(tmp_path / "fresh" / "secret.key") == 0o600
    assert mode(tmp_path / "fresh") == 0o700


@pytest.mark.parametrize("fmt", list(ExportFormat))
async def test_an_export_is_0600_in_a_0700_folder(
    platform: Platform, tmp_path: Path, fmt: ExportFormat
) -> None:
    out = tmp_path / "export"
    stale = out / f"matches.{'jsonl' if fmt is ExportFormat.JSONL else 'parquet'}"
    out.mkdir(mode=0o755)
    stale.write_bytes(b"an earlier export, readable by all")
    os.chmod(stale, 0o644)
    summary = await export_dataset(platform, out, fmt=fmt)
    assert {name: mode(out / name) for name in summary.files} == dict.fromkeys(summary.files, 0o600)
    assert len(summary.files) == 3
    fresh = tmp_path / "new" / "export"
    await export_dataset(platform, fresh, fmt=fmt)
    assert mode(fresh) == 0o700
    assert all(mode(path) == 0o600 for path in fresh.iterdir())
