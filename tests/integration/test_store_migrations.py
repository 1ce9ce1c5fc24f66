"""The migrations build exactly the schema the models describe, on both stores."""

from __future__ import annotations

from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, inspect

from palaestra.platform import Platform
from palaestra.store.models import Base

pytestmark = pytest.mark.asyncio


def _differences(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(connection)
    return list(compare_metadata(context, Base.metadata))


async def test_migrated_schema_matches_the_models(platform: Platform) -> None:
    async with platform.db.engine.connect() as connection:
        differences = await connection.run_sync(_differences)
        tables = await connection.run_sync(lambda c: set(inspect(c).get_table_names()))
    assert differences == []
    assert set(Base.metadata.tables) <= tables
    assert "alembic_version" in tables


async def test_migrating_twice_is_harmless(platform: Platform) -> None:
    await platform.db.migrate()
    async with platform.db.engine.connect() as connection:
        assert await connection.run_sync(_differences) == []
