"""Rows written straight into the store: owners, fighters, agents, matches, runs and tasks.

The ratings, leaderboards and the export read these tables; building them
directly keeps those tests independent of how the referee and the run
stepper produce them.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from sqlalchemy import insert

from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.security import hash_token
from palaestra.store.models import Agent, Candidate, Match, Owner, Run, Task, Turn

__all__ = ["add_agent", "add_fighter", "add_match", "add_matches", "add_owner", "add_run"]

_clock = itertools.count(1)


async def add_owner(platform: Platform, name: str = "owner", token: str | None = None) -> str:
    owner = Owner(
        id=new_id(),
        name=name,
        token_hash=hash_token(token or new_id()),
        created_at=platform.clock.now(),
    )
    async with platform.db.session() as session, session.begin():
        session.add(owner)
    return owner.id


async def add_fighter(
    platform: Platform,
    owner_id: str,
    name: str,
    *,
    entrant_type: str = "harness",
    fighter_class: str = "independent",
    status: str = "ACTIVE",
    hold: bool = False,
    endpoint_url: str | None = "https://fighter.example/cage",
    sandbox_attested: bool = False,
    **extra: Any,
) -> str:
    now = platform.clock.now()
    fighter = Agent(
        id=new_id(),
        owner_id=owner_id,
        name=name,
        arena="cage",
        entrant_type=entrant_type,
        fighter_class=fighter_class,
        endpoint_url=endpoint_url if entrant_type == "harness" else None,
        sandbox_attested=sandbox_attested,
        status=status,
        consecutive_failures=0,
        hold=hold,
        reputation=0.0,
        created_at=now,
        updated_at=now,
        **extra,
    )
    async with platform.db.session() as session, session.begin():
        session.add(fighter)
    return fighter.id


async def add_agent(
    platform: Platform,
    owner_id: str,
    name: str,
    role: str,
    *,
    reputation: float = 0.0,
    status: str = "ACTIVE",
    **extra: Any,
) -> str:
    now = platform.clock.now()
    agent = Agent(
        id=new_id(),
        owner_id=owner_id,
        name=name,
        arena="edgearena",
        role=role,
        endpoint_url=f"https://agents.example/{name}",
        sandbox_attested=False,
        status=status,
        consecutive_failures=0,
        hold=False,
        reputation=reputation,
        created_at=now,
        updated_at=now,
        **extra,
    )
    async with platform.db.session() as session, session.begin():
        session.add(agent)
    return agent.id


async def add_match(
    platform: Platform,
    attacker_id: str,
    defender_id: str,
    outcome: str | None,
    *,
    status: str = "SCORED",
    decided_by: str | None = None,
    finished_at: float | None = None,
    turns: Sequence[dict[str, Any]] = (),
    material: dict[str, Any] | None = None,
) -> str:
    """A match row (finished in call order unless ``finished_at`` says otherwise)."""
    now = platform.clock.now()
    order = next(_clock)
    finished = status in ("SCORED", "VOIDED")
    match = Match(
        id=new_id(),
        attacker_id=attacker_id,
        defender_id=defender_id,
        requested_by=None,
        ruleset="cage.v1",
        status=status,
        outcome=outcome,
        decided_by=decided_by or ("utility" if outcome else None),
        seed=order,
        material=material or {"secret": {"access_code": f"QUILL-{order:04d}-ZEBRA"}},
        deadline_ms=60_000,
        next_turn=7 if finished else 1,
        void_reason="arena fault" if status == "VOIDED" else None,
        created_at=now,
        updated_at=now,
        finished_at=(finished_at if finished_at is not None else now + order) if finished else None,
    )
    async with platform.db.session() as session, session.begin():
        session.add(match)
        await session.flush()
        for i, turn in enumerate(turns, start=1):
            session.add(
                Turn(
                    match_id=match.id,
                    turn=i,
                    side="attacker" if i % 2 else "defender",
                    fighter_id=attacker_id if i % 2 else defender_id,
                    status=turn.get("status", "OK"),
                    payload=turn.get("payload", f"payload {i}"),
                    message=turn.get("message", f"message {i}"),
                    reason=turn.get("reason"),
                    latency_ms=turn.get("latency_ms", 100.0 + i),
                    findings=turn.get("findings"),
                    started_at=now + i,
                    finished_at=now + i + 0.5,
                )
            )
    return match.id


async def add_matches(platform: Platform, games: Sequence[tuple[str, str, str]]) -> None:
    """Many SCORED matches at once: (attacker_id, defender_id, outcome), finished in order."""
    now = platform.clock.now()
    rows: list[dict[str, Any]] = [
        {
            "id": new_id(),
            "attacker_id": attacker,
            "defender_id": defender,
            "requested_by": None,
            "ruleset": "cage.v1",
            "status": "SCORED",
            "outcome": outcome,
            "decided_by": "utility",
            "seed": i,
            "material": {},
            "deadline_ms": 60_000,
            "next_turn": 7,
            "created_at": now,
            "updated_at": now,
            "finished_at": now + i,
        }
        for i, (attacker, defender, outcome) in enumerate(games)
    ]
    async with platform.db.session() as session, session.begin():
        for start in range(0, len(rows), 1000):
            await session.execute(insert(Match), rows[start : start + 1000])


async def add_run(
    platform: Platform,
    tasks: Sequence[dict[str, Any]],
    *,
    status: str = "COMPLETED",
    goal: str = "Find a business",
    owner_id: str | None = None,
    candidates: Sequence[str] = (),
) -> str:
    """A run with its tasks (dicts naming at least ``agent_id`` and ``status``) and candidates."""
    now = platform.clock.now()
    run = Run(
        id=new_id(),
        owner_id=owner_id,
        goal=goal,
        launchpad="make-money",
        status=status,
        phase="REPORT" if status == "COMPLETED" else "SCOUT",
        config={"scout_slots": 5},
        report={"ranking": []} if status == "COMPLETED" else None,
        created_at=now,
        updated_at=now,
        finished_at=now + 10 if status in ("COMPLETED", "FAILED") else None,
    )
    async with platform.db.session() as session, session.begin():
        session.add(run)
        await session.flush()
        for slot, spec in enumerate(tasks):
            spec = dict(spec)
            session.add(
                Task(
                    id=new_id(),
                    run_id=run.id,
                    candidate_id=spec.pop("candidate_id", None),
                    phase=spec.pop("phase", "SCOUT"),
                    slot=slot,
                    attempt=0,
                    executor=spec.pop("executor", "agent"),
                    created_at=now,
                    **spec,
                )
            )
        for rank, title in enumerate(candidates, start=1):
            session.add(
                Candidate(
                    id=new_id(),
                    run_id=run.id,
                    source_task_id=None,
                    title=title,
                    scout_output={"candidate_title": title, "api_key": "leaked?"},
                    status="SHORTLISTED",
                    phase="CRITIQUE",
                    shortlist_score=0.5,
                    final_score=0.7,
                    rank=rank,
                    created_at=now,
                    updated_at=now,
                )
            )
    return run.id
