"""``palaestra check`` and the platform reach the same verdict on the same agent, step by step.

A zoo of agents on 127.0.0.1 goes through the checker and through what the
platform itself runs: the wizard (its checks compared by name and verdict),
the dispatcher (a production dispatch recorded as a success or not), and the
referee's harness entrant (a cage turn accepted as a move or not).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from palaestra.checks import CheckResult, CheckVerdict, check_edgearena
from palaestra.checks.cage import turn
from palaestra.checks.payloads import turn_for
from palaestra.engine.accounts import Caller
from palaestra.engine.agents.registry import register_agent
from palaestra.engine.agents.wizard import WIZARD_CHECKS, begin_wizard, run_wizard_steps
from palaestra.engine.cage.entrants import HarnessEntrant
from palaestra.engine.runs.dispatch import open_slots
from palaestra.engine.runs.work import send
from palaestra.errors import InvalidRequest
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.protocol import Role, Side
from palaestra.rules.runs.runflow import TaskStatus
from tests.integration.edge_agents import EdgeAgent
from tests.integration.run_support import add_agent, add_owner
from tests.integration.servers import Handler, json_reply, reply, serve
from tests.integration.test_dispatch import HOUSE, new_run, scout_slot

pytestmark = pytest.mark.asyncio

KEY = "ea_zoo-key"

#: name -> the agent's switches (a SCOUT each).
ZOO: dict[str, dict[str, Any]] = {
    "good": {},
    "accepts-forged-signatures": {"check_signatures": False},
    "breaks-the-schema": {"omit": "proposed_solution"},
    "answers-202-with-its-result": {"reply_status": 202},
    "down": {"failing": True},
    "post-only": {"get_status": 405},
}

#: name -> (a cage harness, does it make a move).
HARNESSES: dict[str, tuple[Handler, bool]] = {
    "message": (json_reply({"message": "hello"}), True),
    "message-with-202": (json_reply({"message": "hello"}, status=202), True),
    "empty-202": (reply(b"", status=202), False),
    "no-message": (json_reply({"text": "hello"}), False),
    "not-json": (reply(b"hello", content_type="text/plain"), False),
}


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    """The verdicts do not depend on the store: SQLite only."""
    return f"sqlite+aiosqlite:///{tmp_path / 'palaestra.db'}"


def verdicts(results: list[CheckResult]) -> dict[str, CheckVerdict]:
    return {result.name: result.verdict for result in results}


@pytest.mark.parametrize("behaviour", list(ZOO.values()), ids=list(ZOO))
async def test_registration_and_the_wizard_agree_with_the_checker(
    platform: Platform, behaviour: dict[str, Any]
) -> None:
    owner = Caller(await add_owner(platform))
    agent = EdgeAgent(key="", **behaviour)
    async with serve(agent) as endpoint:
        url = endpoint.url("/agent")
        try:
            registered = await register_agent(platform, owner, "zoo", "SCOUT", url)
        except InvalidRequest:
            platform_says = {"probe": CheckVerdict.FAIL}
        else:
            agent.key = registered.api_key
            attempt = await begin_wizard(platform, owner, registered.agent.id)
            platform_says = {"probe": CheckVerdict.PASS}
            platform_says |= verdicts(await run_wizard_steps(platform, attempt))
        checker = await check_edgearena(
            platform.egress, url, Role.SCOUT, key=agent.key, clock=platform.clock
        )
    checker_says = verdicts(checker)
    if platform_says["probe"] is CheckVerdict.PASS:
        assert list(platform_says) == ["probe", *WIZARD_CHECKS]
    assert {name: checker_says[name] for name in platform_says} == platform_says


#: The zoo's agents that pass the probe: the checker dispatches only to those.
REGISTERED = {name: behaviour for name, behaviour in ZOO.items() if name != "down"}


@pytest.mark.parametrize("behaviour", list(REGISTERED.values()), ids=list(REGISTERED))
async def test_the_dispatcher_and_the_checker_agree(
    platform: Platform, behaviour: dict[str, Any]
) -> None:
    owner = await add_owner(platform)
    async with serve(EdgeAgent(key=KEY, **behaviour)) as endpoint:
        url = endpoint.url("/agent")
        await add_agent(platform, owner, "zoo", "SCOUT", url, KEY)
        run_id = await new_run(platform, owner)
        [opened] = await open_slots(platform, [scout_slot(run_id)], house_executor=HOUSE)
        end = await send(platform, opened)
        checker = await check_edgearena(
            platform.egress, url, Role.SCOUT, key=KEY, clock=platform.clock
        )
    assert end is not None  # none of the zoo defers to the callback
    dispatch = next(result for result in checker if result.name == "dispatch:SCOUT")
    assert dispatch.passed == (end.status is TaskStatus.SUCCEEDED)
    assert dispatch.reason == end.reason


@pytest.mark.parametrize(("handler", "moves"), list(HARNESSES.values()), ids=list(HARNESSES))
async def test_the_referee_and_the_checker_agree_on_a_turn(
    platform: Platform, handler: Handler, moves: bool
) -> None:
    async with serve(handler) as endpoint:
        url = endpoint.url("/fighter")
        match_id = new_id()
        request = turn_for(Side.ATTACKER, match_id=match_id, turn=1, deadline_ms=10_000)
        move = await HarnessEntrant(platform.egress, url).move(request)
        check, _ = await turn(
            platform.egress, url, Side.ATTACKER, match_id=match_id, number=1, deadline_ms=10_000
        )
    assert (move.message is not None, check.passed) == (moves, moves)
    assert check.reason == move.reason
