"""``one_of`` compiles to an expanding ``IN`` on SQLite, one array parameter on PostgreSQL."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite

from palaestra.store.lists import one_of
from palaestra.store.models import Owner


def test_it_is_an_expanding_in_on_sqlite_and_one_array_parameter_on_postgresql() -> None:
    query = select(Owner.id).where(one_of(Owner.id, "ids"), ~one_of(Owner.name, "names"))
    assert str(query.compile(dialect=sqlite.dialect())).endswith(
        "WHERE owners.id IN (__[POSTCOMPILE_ids]) AND NOT owners.name IN (__[POSTCOMPILE_names])"
    )
    pg = str(query.compile(dialect=postgresql.asyncpg.dialect()))  # type: ignore[no-untyped-call]
    assert "owners.id = ANY ($1::VARCHAR(36)[])" in pg
    assert "owners.name = ANY ($2::VARCHAR(200)[])" in pg
    # Statements on different columns or parameters are never taken for one another.
    keys = [
        select(Owner.id).where(one_of(column, name))._generate_cache_key()
        for column in (Owner.id, Owner.name)
        for name in ("ids", "names")
    ]
    assert all(a != b for n, a in enumerate(keys) for b in keys[n + 1 :])
    assert keys[0] == select(Owner.id).where(one_of(Owner.id, "ids"))._generate_cache_key()
