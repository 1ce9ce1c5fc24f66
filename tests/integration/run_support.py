"""Helpers for run tests: agents stored directly (the wizard is tested elsewhere), and reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select

from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.store.models import Agent, AgentEvent, Candidate, Owner, Run, Task

__all__ = [
    "add_agent",
    "add_owner",
    "agent_row",
    "candidates_of",
    "counted",
    "dispatch_events",
    "run_row",
    "tasks_of",
]


def counted(platform: Platform, metric: str, kind: str) -> float:
    """The value of a counter ``metric`` (its ``_total`` sample) with the label ``kind``."""
    value = platform.metrics.registry.get_sample_value(f"{metric}_total", {"kind": kind})
    return value or 0.0


async def add_owner(platform: Platform, name: str = "owner") -> str:
    owner_id = new_id()
    async with platform.db.session() as session, session.begin():
        session.add(
            Owner(id=owner_id, name=name, token_hash=new_id(), created_at=platform.clock.now())
        )
    return owner_id


async def add_agent(
    platform: Platform,
    owner_id: str,
    name: str,
    role: str,
    url: str,
    key: str,
    **state: Any,
) -> str:
    """An admitted agent (ACTIVE unless ``state`` says otherwise) with ``key`` sealed."""
    now = platform.clock.now()
    agent = Agent(
        id=new_id(),
        owner_id=owner_id,
        name=name,
        arena="edgearena",
        role=role,
        endpoint_url=url,
        sandbox_attested=False,
        key_sealed=platform.vault.seal(key),
        status="ACTIVE",
        consecutive_failures=0,
        hold=False,
        reputation=0.0,
        wizard_passed_at=now,
        created_at=now,
        updated_at=now,
    )
    for column, value in state.items():
        setattr(agent, column, value)
    async with platform.db.session() as session, session.begin():
        session.add(agent)
    return agent.id


async def agent_row(platform: Platform, agent_id: str) -> Agent:
    async with platform.db.session() as session:
        agent = await session.get(Agent, agent_id)
    assert agent is not None
    return agent


async def run_row(platform: Platform, run_id: str) -> Run:
    async with platform.db.session() as session:
        run = await session.get(Run, run_id)
    assert run is not None
    return run


async def tasks_of(platform: Platform, run_id: str) -> Sequence[Task]:
    async with platform.db.session() as session:
        query = select(Task).where(Task.run_id == run_id).order_by(Task.created_at, Task.id)
        return (await session.scalars(query)).all()


async def candidates_of(platform: Platform, run_id: str) -> Sequence[Candidate]:
    async with platform.db.session() as session:
        query = select(Candidate).where(Candidate.run_id == run_id).order_by(Candidate.id)
        return (await session.scalars(query)).all()


async def dispatch_events(platform: Platform, agent_id: str) -> Sequence[AgentEvent]:
    async with platform.db.session() as session:
        query = (
            select(AgentEvent)
            .where(AgentEvent.agent_id == agent_id, AgentEvent.kind == "dispatch")
            .order_by(AgentEvent.id)
        )
        return (await session.scalars(query)).all()
