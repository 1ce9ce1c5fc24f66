"""`palaestra serve` killed with SIGKILL in the middle of a run: after a restart the run
finishes, and no taskId ever reaches an endpoint twice (the agents record every one)."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet

from tests.acceptance.test_serve_restart import ADMIN, client, free_port, palaestra_serve
from tests.integration.edge_agents import EdgeAgent
from tests.integration.servers import serve

pytestmark = pytest.mark.asyncio

AUTH = {"Authorization": f"Bearer {ADMIN}"}
SIZES = {"scouts": 2, "shortlist": 2, "builds": 1, "verifies": 1, "critiques": 1}


async def admit(call: Any, owner: dict[str, str], agent: EdgeAgent, name: str, url: str) -> None:
    status, created = await call(
        "POST",
        "/api/agents",
        headers=owner,
        json={"name": name, "role": agent.role, "endpoint_url": url},
    )
    assert status == 201, created
    agent.key = created["api_key"]
    _, wizard = await call("POST", f"/api/agents/{created['agent_id']}/wizard", headers=owner)
    assert wizard["passed"] is True, wizard


async def test_a_run_survives_sigkill_without_a_second_dispatch(tmp_path: Path) -> None:
    secret = Fernet.generate_key().decode()
    port = free_port()
    public = f"http://127.0.0.1:{port}"
    env = {
        "secret": secret,
        "PALAESTRA_PUBLIC_URL": public,
        "PALAESTRA_MONITOR_ENABLED": "false",
        # 1/10 of the protocol's deadlines: SCOUT, VERIFY, CRITIQUE 3 s; BUILD 9 s.
        "PALAESTRA_DISPATCH_DEADLINE_SCALE": "0.1",
    }
    agents = {
        "scout-1": EdgeAgent(key="", role="SCOUT"),
        "scout-2": EdgeAgent(key="", role="SCOUT"),
        "builder": EdgeAgent(key="", role="BUILDER"),
        "analyst-1": EdgeAgent(key="", role="ANALYST"),
        "analyst-2": EdgeAgent(key="", role="ANALYST"),
    }
    async with (
        serve(agents["scout-1"]) as e1,
        serve(agents["scout-2"]) as e2,
        serve(agents["builder"]) as e3,
        serve(agents["analyst-1"]) as e4,
        serve(agents["analyst-2"]) as e5,
    ):
        endpoints = dict(zip(agents, [e1, e2, e3, e4, e5], strict=True))
        with palaestra_serve(tmp_path, port, **dict(env)) as process:
            async with client(port) as call:
                _, owner = await call("POST", "/api/owners", json={"name": "o"}, headers=AUTH)
                owner_auth = {"Authorization": f"Bearer {owner['token']}"}
                for name, agent in agents.items():
                    await admit(call, owner_auth, agent, name, endpoints[name].url(f"/{name}"))
                # The builder answers 202 and calls back 1.5 s later, retrying while the
                # platform is down: the kill lands while its tasks are RUNNING.
                agents["builder"].defer_to = public
                agents["builder"].callback_delay_s = 1.5
                status, started = await call(
                    "POST",
                    "/api/runs",
                    headers=owner_auth,
                    json={"goal": "Find a business to start", "sizes": SIZES},
                )
                assert status == 202, started
                run_id = started["run_id"]
                limit = time.monotonic() + 30
                while not agents["builder"].ledger.task_ids:
                    assert time.monotonic() < limit, "no BUILD task was dispatched"
                    await asyncio.sleep(0.02)
            process.send_signal(signal.SIGKILL)
            assert process.wait(timeout=10) == -signal.SIGKILL
        at_kill = {name: list(agent.ledger.task_ids) for name, agent in agents.items()}

        with palaestra_serve(tmp_path, port, **dict(env)):
            async with client(port) as call:
                limit = time.monotonic() + 60
                while True:
                    _, run = await call("GET", f"/api/runs/{run_id}", headers=owner_auth)
                    if run["status"] != "RUNNING":
                        break
                    assert time.monotonic() < limit, run
                    await asyncio.sleep(0.1)
                for agent in agents.values():
                    await agent.settle()

    assert run["status"] == "COMPLETED", run
    received = [tid for agent in agents.values() for tid in agent.ledger.task_ids]
    assert len(received) == len(set(received)), "a taskId reached an endpoint twice"
    assert all(agent.ledger.bad_dispatches == 0 for agent in agents.values())
    dispatched = {t["task_id"] for t in run["tasks"] if t["agent_id"] is not None}
    assert set(received) <= dispatched  # every taskId an agent saw is one task of the run
    tasks = {t["task_id"]: t for t in run["tasks"]}
    # The builder's tasks in flight at the kill were never sent again: each ended once,
    # by its callback (which landed after the restart) or by its deadline.
    for task_id in at_kill["builder"]:
        assert received.count(task_id) == 1
        assert (tasks[task_id]["status"], tasks[task_id]["via"]) in {
            ("SUCCEEDED", "callback"),
            ("TIMEOUT", "deadline"),
        }
    landed = [status for _, status, _ in agents["builder"].ledger.callbacks]
    assert 200 in landed
    # Both scouts proposed the same idea: merged into one candidate, which is ranked.
    [ranked] = run["report"]["ranking"]
    [merged] = run["report"]["not_shortlisted"]
    assert merged["merged_into"] == ranked["candidate_id"]
