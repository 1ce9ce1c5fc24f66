"""``one_of``: a list parameter matches as ``IN`` would, on both stores, whatever its length."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from palaestra.engine.accounts import create_owner
from palaestra.platform import Platform
from palaestra.store.lists import one_of
from palaestra.store.models import Owner

pytestmark = pytest.mark.asyncio


async def test_rows_match_as_with_in(platform: Platform) -> None:
    owners = [(await create_owner(platform, f"o{n}"))[0] for n in range(5)]
    ids = sorted(o.id for o in owners)
    query = select(Owner.id).where(one_of(Owner.id, "ids")).order_by(Owner.id)
    async with platform.db.engine.connect() as connection:
        for wanted in ([], ids[:1], ids[1:4], ids, [ids[2], ids[2], "no-such-id"]):
            found = list((await connection.execute(query, {"ids": wanted})).scalars())
            assert found == sorted(set(wanted) & set(ids))
        not_in = select(Owner.id).where(~one_of(Owner.id, "ids")).order_by(Owner.id)
        assert list((await connection.execute(not_in, {"ids": ids[:2]})).scalars()) == ids[2:]

    def rename(connection: Connection) -> int:
        statement = update(Owner).where(one_of(Owner.id, "ids")).values(name="renamed")
        return connection.execute(statement, {"ids": ids[:3]}).rowcount

    assert await platform.db.transact(rename) == 3
