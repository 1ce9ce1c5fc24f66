"""Closed-set columns keep the strings they always stored, and read them back as members."""

from __future__ import annotations

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import StatementError

from palaestra.platform import Platform
from palaestra.protocol.cage import Side
from palaestra.protocol.constants import Arena, Phase, Role
from palaestra.rules.cage.matchflow import MatchKind, MatchStatus, TurnStatus
from palaestra.rules.cage.outcome import DecidedBy
from palaestra.rules.producers import Producer
from palaestra.rules.ratings.live import Skill
from palaestra.rules.runs.runflow import RunStatus, TaskStatus
from palaestra.rules.status import Status
from palaestra.store.models import Agent, Match, Run, Task, Turn
from palaestra.store.rating_models import FighterRating
from tests.integration.arena_rows import add_fighter, add_match, add_owner

pytestmark = pytest.mark.asyncio


async def _raw(platform: Platform, sql: str, **params: object) -> list[tuple[object, ...]]:
    async with platform.db.engine.begin() as connection:
        result = await connection.execute(text(sql), params)
        return [tuple(row) for row in result] if result.returns_rows else []


async def test_rows_stored_as_strings_read_back_as_members(platform: Platform) -> None:
    owner = await add_owner(platform)
    attacker = await add_fighter(platform, owner, "attacker")
    defender = await add_fighter(platform, owner, "defender")
    match_id = await add_match(
        platform,
        attacker,
        defender,
        "draw",
        decided_by="utility",
        turns=[{"turn": 1, "side": "attacker", "status": "OK"}],
    )
    # A row as an older writer stored it: plain strings, written without the models.
    await _raw(
        platform,
        "UPDATE agents SET arena = 'edgearena', role = 'BUILDER', status = 'PAUSED',"
        " paused_from = 'DEGRADED' WHERE id = :id",
        id=attacker,
    )
    await _raw(platform, "UPDATE turns SET producer = 'house_model'")
    await _raw(
        platform,
        "INSERT INTO fighter_ratings (fighter_id, side, mu, sigma, matches, wins, draws, losses,"
        " updated_at) VALUES (:id, 'defence', 25, 8, 1, 0, 1, 0, 0)",
        id=defender,
    )
    async with platform.db.session() as session:
        agent = await session.get(Agent, attacker)
        match = await session.get(Match, match_id)
        turn = await session.scalar(select(Turn).where(Turn.match_id == match_id))
        rating = await session.scalar(select(FighterRating))
    assert agent is not None
    assert match is not None
    assert turn is not None
    assert rating is not None
    assert (agent.arena, agent.role, agent.status, agent.paused_from) == (
        Arena.EDGEARENA,
        Role.BUILDER,
        Status.PAUSED,
        Status.DEGRADED,
    )
    assert type(agent.status) is Status
    assert (match.kind, match.status, match.decided_by) == (
        MatchKind.RATED,
        MatchStatus.SCORED,
        DecidedBy.UTILITY,
    )
    assert type(match.status) is MatchStatus
    assert (turn.side, turn.status, turn.producer) == (
        Side.ATTACKER,
        TurnStatus.OK,
        Producer.HOUSE_MODEL,
    )
    assert type(turn.side) is Side
    assert rating.side is Skill.DEFENCE


async def test_members_are_stored_as_their_strings(platform: Platform) -> None:
    now = platform.clock.now()
    async with platform.db.session() as session, session.begin():
        session.add(
            Run(
                id="run-1",
                goal="a goal",
                launchpad="default",
                status=RunStatus.FAILED,
                phase=Phase.CRITIQUE,
                config={},
                created_at=now,
                updated_at=now,
            )
        )
        session.add(
            Task(
                id="task-1",
                run_id="run-1",
                phase=Phase.VERIFY,
                slot=0,
                attempt=0,
                executor="house-baseline",
                status=TaskStatus.VOIDED,
                producer=Producer.HOUSE_BASELINE,
                created_at=now,
            )
        )
    assert await _raw(platform, "SELECT status, phase FROM runs") == [("FAILED", "CRITIQUE")]
    assert await _raw(platform, "SELECT phase, status, producer FROM tasks") == [
        ("VERIFY", "VOIDED", "house_baseline")
    ]


async def test_an_unknown_stored_value_is_an_error_not_a_guess(platform: Platform) -> None:
    owner = await add_owner(platform)
    fighter = await add_fighter(platform, owner, "fighter")
    await _raw(platform, "UPDATE agents SET status = 'RETIRED' WHERE id = :id", id=fighter)
    async with platform.db.session() as session:
        with pytest.raises(LookupError, match="'RETIRED' is not among the defined enum values"):
            await session.get(Agent, fighter)


async def test_a_value_outside_the_set_is_not_written(platform: Platform) -> None:
    owner = await add_owner(platform)
    fighter = await add_fighter(platform, owner, "fighter")
    async with platform.db.session() as session:
        agent = await session.get(Agent, fighter)
        assert agent is not None
        agent.status = "RETIRED"  # type: ignore[assignment]
        with pytest.raises(StatementError, match="'RETIRED' is not among the defined enum values"):
            await session.commit()
    assert await _raw(platform, "SELECT status FROM agents") == [("ACTIVE",)]
