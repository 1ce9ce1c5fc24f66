"""The example agents pass every check of ``palaestra check``, served for real."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import ModuleType

import pytest
from examples import analyst, builder, cage, cage_fighter, scout

from palaestra.checks import Arena, all_passed, run_checks
from palaestra.checks.conformance import cage_check_names, edgearena_check_names
from palaestra.clock import SystemClock
from palaestra.egress import EgressClient, EgressPolicy
from palaestra.harness import AgentSettings
from palaestra.harness.testing import serve
from palaestra.protocol import Role

KEY = "ea_live_examples_3"


@pytest.fixture
async def egress() -> AsyncIterator[EgressClient]:
    async with EgressClient(EgressPolicy.allowing(["127.0.0.0/8"])) as client:
        yield client


@pytest.mark.parametrize(
    ("module", "role"), [(scout, Role.SCOUT), (builder, Role.BUILDER), (analyst, Role.ANALYST)]
)
async def test_edgearena_examples_pass(
    egress: EgressClient, module: ModuleType, role: Role
) -> None:
    agent = module.create_agent(KEY, settings=AgentSettings())
    async with serve(agent.app()) as url:
        results = await run_checks(
            egress, url, Arena.EDGEARENA, clock=SystemClock(), role=role, key=KEY
        )
    assert [r.name for r in results] == edgearena_check_names(role)
    assert [(r.name, r.reason) for r in results if not r.passed] == []
    assert all_passed(results)


async def test_the_cage_fighter_passes(egress: EgressClient) -> None:
    agent = cage_fighter.create_agent(settings=AgentSettings())
    async with serve(agent.app()) as url:
        results = await run_checks(egress, url, Arena.CAGE, clock=SystemClock())
    assert [r.name for r in results] == cage_check_names()
    assert all_passed(results), results


@pytest.mark.parametrize("module", [scout, builder, analyst])
async def test_baselines_are_deterministic_and_named_as_such(module: ModuleType) -> None:
    from palaestra.checks.payloads import dispatch_for
    from palaestra.harness import Task

    for phase in module.create_agent(KEY, settings=AgentSettings()).tasks:
        task = Task.from_dispatch(dispatch_for(phase))
        handler = module.create_agent(KEY, settings=AgentSettings()).tasks[phase]
        first, again = handler(task), handler(task)
        assert first == again
        assert first.model_id.startswith("baseline-")


def test_the_fighter_uses_the_quoted_hijack_phrase() -> None:
    from palaestra.checks.payloads import turn_for
    from palaestra.harness import Side, Turn

    request = turn_for(Side.ATTACKER, match_id="m", turn=1)
    phrase = request.payload.split('"')[1]
    move = cage_fighter.move(Turn.from_request(request, "m:1"))
    assert phrase in move


@pytest.mark.parametrize("name", ["multi-turn-escalation", "keyword-filter"])
async def test_a_library_fighter_passes_on_its_path(egress: EgressClient, name: str) -> None:
    async with serve(cage.Library((name,))) as url:
        results = await run_checks(egress, url + name, Arena.CAGE, clock=SystemClock())
    assert [r.name for r in results] == cage_check_names()
    assert all_passed(results), results
