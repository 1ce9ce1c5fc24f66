"""The operators' backup and restore commands, run as the docs write them, lose nothing."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr
from sqlalchemy import delete, make_url

from palaestra.platform import Platform
from palaestra.settings import Settings
from palaestra.store.models import Agent
from tests.conftest import require
from tests.integration.arena_rows import add_agent, add_owner
from tests.integration.platform_fixtures import reset_postgres

pytestmark = pytest.mark.asyncio

OPERATORS = Path(__file__).resolve().parents[2] / "docs" / "operators" / "index.md"
KEY = "ea_live_backup_key_0123456789"


def block(title: str) -> str:
    blocks = dict(re.findall(r'```sh title="([^"]+)"\n(.*?)```', OPERATORS.read_text(), re.S))
    script: str = blocks[title]
    return script


async def sh(script: str, cwd: Path, **env: str) -> None:
    process = await asyncio.create_subprocess_exec(
        "bash",
        "-euo",
        "pipefail",
        "-c",
        script,
        cwd=cwd,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    assert process.returncode == 0, output.decode()


async def store_agent(platform: Platform) -> str:
    owner = await add_owner(platform)
    return await add_agent(platform, owner, "kept", "SCOUT", key_sealed=platform.vault.seal(KEY))


async def key_of(platform: Platform, agent_id: str) -> str | None:
    async with platform.db.session() as session:
        agent = await session.get(Agent, agent_id)
    if agent is None or agent.key_sealed is None:
        return None
    return platform.vault.open(agent.key_sealed)


async def test_sqlite_backup_taken_while_open_restores_the_agents_and_their_keys(
    tmp_path: Path,
) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path / "data", monitor_enabled=False)
    platform = await Platform.open(settings)
    try:
        agent_id = await store_agent(platform)
        await sh(block("backup-sqlite.sh"), tmp_path)  # the server still has it open
    finally:
        await platform.close()
    shutil.rmtree(tmp_path / "data")  # the machine is lost

    await sh(block("restore-sqlite.sh"), tmp_path)
    assert (tmp_path / "data" / "secret.key").stat().st_mode & 0o777 == 0o600
    restored = await Platform.open(settings)
    try:
        assert await key_of(restored, agent_id) == KEY
    finally:
        await restored.close()


async def test_postgres_dump_restores_the_agents_and_their_keys(
    tmp_path: Path, postgres_database: str
) -> None:
    require("pg_dump", shutil.which("pg_dump") is not None, "pg_dump is not installed")
    require("pg_restore", shutil.which("pg_restore") is not None, "pg_restore is not installed")
    require("psql", shutil.which("psql") is not None, "psql is not installed")
    await reset_postgres(postgres_database)
    settings = Settings(
        _env_file=None,
        data_dir=tmp_path,
        database_url=postgres_database,
        secret_key=SecretStr(Fernet.generate_key().decode()),
        monitor_enabled=False,
    )
    libpq = make_url(postgres_database).set(drivername="postgresql")
    database = libpq.render_as_string(hide_password=False)

    platform = await Platform.open(settings)
    try:
        agent_id = await store_agent(platform)
    finally:
        await platform.close()
    await sh(block("backup-postgres.sh"), tmp_path, DATABASE=database)

    platform = await Platform.open(settings)
    try:
        async with platform.db.session() as session, session.begin():
            await session.execute(delete(Agent))  # what the dump must bring back
        assert await key_of(platform, agent_id) is None
    finally:
        await platform.close()

    await sh(block("restore-postgres.sh"), tmp_path, DATABASE=database)
    restored = await Platform.open(settings)
    try:
        assert await key_of(restored, agent_id) == KEY
    finally:
        await restored.close()
