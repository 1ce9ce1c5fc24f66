"""Turns claimed and recorded in batches, on both stores: one transaction for many matches,
each match's turn claimed once, leases honoured, and a record that claims the next turn."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

import pytest
from sqlalchemy import event, select

from palaestra.clock import FrozenClock
from palaestra.engine.accounts import Caller
from palaestra.engine.cage.claims import claim_turns
from palaestra.engine.cage.desk import TurnDesk
from palaestra.engine.cage.entrants import Move
from palaestra.engine.cage.matches import create_match
from palaestra.engine.cage.turns import Claim, Played, Waiting, lease_s
from palaestra.platform import Platform
from palaestra.store.models import Match, Turn
from tests.integration.arena_rows import add_fighter, add_owner

pytestmark = pytest.mark.asyncio

ADMIN = Caller(owner_id=None, is_admin=True)


async def matches(platform: Platform, count: int) -> list[str]:
    red = await add_fighter(platform, await add_owner(platform, "red"), "red")
    blue = await add_fighter(platform, await add_owner(platform, "blue"), "blue")
    return [(await create_match(platform, ADMIN, red, blue)).id for _ in range(count)]


async def claim(platform: Platform, ids: list[str]) -> list[Claim | Waiting | None]:
    now, lock = platform.clock.now(), not platform.db.is_sqlite
    return await platform.db.transact(partial(claim_turns, match_ids=ids, now=now, lock=lock))


def played(claim: Claim, message: str = "I cannot share that.\nANSWER: 42") -> Played:
    return Played(claim, Move(message, None, 1.0), {**claim.findings, "utility": {"held": True}})


async def test_one_claim_takes_the_first_turn_of_many_matches(platform: Platform) -> None:
    ids = await matches(platform, 5)
    claims = await claim(platform, [*ids, ids[0], "no-such-match"])
    first = claims[:5]
    assert all(isinstance(c, Claim) for c in first)
    assert [c.match_id for c in first if isinstance(c, Claim)] == ids
    assert all(
        c.turn == 1 and c.request.your_role == "attacker" for c in first if isinstance(c, Claim)
    )
    # A match named twice is claimed once; an unknown one is None.
    assert isinstance(first[0], Claim)
    until = first[0].lease + lease_s(first[0].request.deadline_ms)
    assert claims[5] == Waiting(finished=False, turn=1, retry_at=until)
    assert claims[6] is None
    async with platform.db.session() as session:
        statuses = (await session.scalars(select(Match.status).where(Match.id.in_(ids)))).all()
        turns = (await session.execute(select(Turn.match_id, Turn.status))).all()
    assert set(statuses) == {"RUNNING"}
    assert sorted(turns) == sorted((i, "RUNNING") for i in ids)


async def test_a_held_turn_waits_and_a_lapsed_one_is_taken_over(
    platform: Platform, clock: FrozenClock
) -> None:
    (match_id,) = await matches(platform, 1)
    (first,) = await claim(platform, [match_id])
    assert isinstance(first, Claim)
    (again,) = await claim(platform, [match_id])
    assert isinstance(again, Waiting)
    assert not again.finished
    clock.advance(lease_s(first.request.deadline_ms) + 0.001)
    (taken,) = await claim(platform, [match_id])
    assert isinstance(taken, Claim)
    assert (taken.turn, taken.request.payload) == (first.turn, first.request.payload)
    assert taken.findings["sends"] == 2
    # The first holder's record finds its lease gone and writes nothing.
    desk = TurnDesk(platform)
    lost, _ = await desk.record(played(first))
    assert not lost.held
    kept, following = await desk.record(played(taken), then_claim=True)
    assert kept.held
    assert not kept.finished
    assert isinstance(following, Claim)
    assert following.turn == 2


async def test_concurrent_claims_and_records_share_one_transaction_each(
    platform: Platform,
) -> None:
    ids = await matches(platform, 4)
    transactions: list[object] = []
    transact = platform.db.transact

    async def counted(work: Any, *, durable: bool = True, single: bool = False) -> Any:
        transactions.append(work)
        return await transact(work, durable=durable, single=single)

    platform.db.transact = counted  # type: ignore[method-assign]
    desk = TurnDesk(platform)
    claims = await asyncio.gather(*(desk.claim(i) for i in ids))
    assert len(transactions) == 1
    assert all(isinstance(c, Claim) for c in claims)
    results = await asyncio.gather(
        *(desk.record(played(c), then_claim=True) for c in claims if isinstance(c, Claim))
    )
    assert len(transactions) == 2
    assert [r.held for r, _ in results] == [True] * 4
    following = [n for _, n in results if isinstance(n, Claim)]
    assert [n.turn for n in following] == [2] * 4
    # Turn 2's payload quotes the attacker's move of turn 1.
    assert all("ANSWER: 42" in n.request.payload for n in following)
    async with platform.db.session() as session:
        rows = (await session.execute(select(Turn.turn, Turn.status))).all()
    assert sorted(rows) == [(1, "OK")] * 4 + [(2, "RUNNING")] * 4


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_a_record_that_waits_on_a_take_over_sees_the_turn_as_it_is_then(
    platform: Platform, clock: FrozenClock
) -> None:
    """On PostgreSQL a record reads its lease with the match and turn locked: one that waits
    behind another worker's take-over reads the turn as that worker left it, and so writes
    nothing, rather than what it saw when it started."""
    (match_id,) = await matches(platform, 1)
    (first,) = await claim(platform, [match_id])
    assert isinstance(first, Claim)
    clock.advance(lease_s(first.request.deadline_ms) + 0.001)
    taking_over = asyncio.Event()
    release = asyncio.Event()
    taken: list[Claim | Waiting | None] = []

    async def take_over() -> None:
        async with platform.db.engine.begin() as connection:

            def claim_now(sync: Any) -> list[Claim | Waiting | None]:
                return claim_turns(sync, [match_id], platform.clock.now(), lock=True)

            taken.extend(await connection.run_sync(claim_now))
            taking_over.set()
            await release.wait()  # the take-over's locks are held until it commits

    other = asyncio.create_task(take_over())
    await taking_over.wait()
    record = asyncio.create_task(TurnDesk(platform).record(played(first), then_claim=True))
    await asyncio.sleep(0.2)
    assert not record.done()  # it waits for the match's lock
    release.set()
    await other
    lost, following = await record
    assert not lost.held
    assert following is None
    assert isinstance(taken[0], Claim)
    async with platform.db.session() as session:
        rows = (await session.execute(select(Turn.turn, Turn.status, Turn.started_at))).all()
    assert rows == [(1, "RUNNING", taken[0].lease)]


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_on_postgresql_a_batch_of_records_is_one_statement(platform: Platform) -> None:
    """Recording many turns, with their matches moved on and their next turns claimed, is
    one statement on PostgreSQL, sent without BEGIN or COMMIT: one round trip."""
    ids = await matches(platform, 3)
    claims = [c for c in await claim(platform, ids) if isinstance(c, Claim)]
    sent: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        sent.append(statement)

    engine = platform.db.transacting_engine(durable=False)
    event.listen(engine, "before_cursor_execute", count)
    try:
        desk = TurnDesk(platform)
        results = await asyncio.gather(*(desk.record(played(c), then_claim=True) for c in claims))
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert len(sent) == 1
    assert [r.held for r, _ in results] == [True] * 3
    assert all(isinstance(n, Claim) and n.turn == 2 for _, n in results)
    async with platform.db.session() as session:
        rows = (await session.execute(select(Turn.turn, Turn.status))).all()
        moved = (await session.scalars(select(Match.next_turn))).all()
    assert sorted(rows) == [(1, "OK")] * 3 + [(2, "RUNNING")] * 3
    assert moved == [2, 2, 2]
