"""The runs API's contract: who sees which run, what a run looks like, and bad requests."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from palaestra.platform import Platform
from tests.integration.platform_fixtures import ADMIN_TOKEN, Api, running

pytestmark = pytest.mark.asyncio

SMALL = {"scouts": 2, "shortlist": 1, "builds": 1, "verifies": 1, "critiques": 1}


async def start(api: Api, token: str, goal: str = "Find a niche", **extra: Any) -> str:
    status, body = await api.call(
        "POST", "/api/runs", token=token, json={"goal": goal, "sizes": SMALL} | extra
    )
    assert status == 202, body
    assert set(body) == {"run_id"}
    run_id: str = body["run_id"]
    return run_id


async def finished(api: Api, token: str, run_id: str) -> dict[str, Any]:
    limit = time.monotonic() + 30
    while True:
        _, run = await api.call("GET", f"/api/runs/{run_id}", token=token)
        if run["status"] != "RUNNING":
            return run  # type: ignore[no-any-return]
        assert time.monotonic() < limit
        await asyncio.sleep(0.05)


async def test_a_run_is_visible_to_its_owner_and_the_admin_only(platform: Platform) -> None:
    async with running(platform) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        first = await start(api, alice, "first goal")
        second = await start(api, alice, "second goal")
        theirs = await start(api, bob)
        for run_id in (first, second):
            status, body = await api.call("GET", f"/api/runs/{run_id}", token=bob)
            assert (status, body) == (
                404,
                {"error": f"Run {run_id} not found", "code": "not-found"},
            )
        assert (await api.call("GET", f"/api/runs/{theirs}", token=ADMIN_TOKEN))[0] == 200
        _, mine = await api.call("GET", "/api/runs", token=alice)
        assert [r["run_id"] for r in mine] == [second, first]  # newest first
        _, everyone = await api.call("GET", "/api/runs", token=ADMIN_TOKEN)
        assert {r["run_id"] for r in everyone} == {first, second, theirs}
        status, _ = await api.call("GET", "/api/runs")
        assert status == 401
        for run_id in (first, second, theirs):
            await finished(api, ADMIN_TOKEN, run_id)


async def test_a_run_shows_its_phases_tasks_candidates_and_report(platform: Platform) -> None:
    async with running(platform) as api:
        owner = await api.owner()
        run_id = await start(api, owner)
        run = await finished(api, owner, run_id)
        task = run["tasks"][0]
        status, detail = await api.call("GET", task["href"], token=owner)
        other = await api.owner("other")
        hidden = await api.call("GET", task["href"], token=other)
        admin_run = await start(api, ADMIN_TOKEN)  # the admin may start runs too
        await finished(api, ADMIN_TOKEN, admin_run)
    assert set(run) >= {"run_id", "status", "phases", "tasks", "candidates", "report"}
    assert (run["status"], run["phase"], run["launchpad"]) == ("COMPLETED", "REPORT", "make-money")
    assert [p["phase"] for p in run["phases"]] == ["SCOUT", "BUILD", "VERIFY", "CRITIQUE"]
    assert all(p["status"] == "done" for p in run["phases"])
    assert [p["slots"] for p in run["phases"]] == [2, 1, 1, 1]
    assert len(run["tasks"]) == 5
    assert run["config"]["sizes"] == SMALL
    assert run["config"]["deadlines_ms"] == {
        "SCOUT": 30_000,
        "BUILD": 90_000,
        "VERIFY": 30_000,
        "CRITIQUE": 30_000,
    }
    assert sorted(c["status"] for c in run["candidates"]) == ["DROPPED", "RANKED"]
    assert run["report"]["ranking"][0]["rank"] == 1
    assert status == 200
    assert detail["task_id"] == task["task_id"]
    assert detail["payload"]["taskId"] == task["task_id"]
    assert detail["payload"]["launchpadName"] == "Make Money"
    assert detail["output"]["candidate_title"]
    assert hidden[0] == 404


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"goal": "   "}, 400, "goal must be 1 to 4000 characters"),
        ({"goal": "x", "launchpad": "get-rich-quick"}, 400, "launchpad must be one of make-money"),
        (
            {"goal": "x", "sizes": {"scouts": 0}},
            400,
            "sizes.scouts must be an integer from 1 to 20",
        ),
        (
            {"goal": "x", "sizes": {"scouts": 2, "shortlist": 3}},
            400,
            "sizes.shortlist must not exceed sizes.scouts",
        ),
        ({"goal": ""}, 422, "goal: String should have at least 1 character"),
        ({}, 422, "goal: Field required"),
        (
            {"goal": "x", "sizes": {"judges": 2}},
            422,
            "sizes.judges: Extra inputs are not permitted",
        ),
        # A JSON boolean is not an integer (nor is a string, nor a fraction).
        ({"goal": "x", "sizes": {"builds": True}}, 422, "sizes.builds: Input should be an integer"),
        ({"goal": "x", "sizes": {"scouts": "3"}}, 422, "sizes.scouts: Input should be an integer"),
        ({"goal": "x", "sizes": {"scouts": 2.5}}, 422, "sizes.scouts: Input should be an integer"),
        ({"goal": 5}, 422, "goal: Input should be a valid string"),
    ],
)
async def test_bad_run_requests_get_json_errors(
    platform: Platform, body: dict[str, Any], status: int, message: str
) -> None:
    async with running(platform) as api:
        owner = await api.owner()
        assert await api.call("POST", "/api/runs", token=owner, json=body) == (
            status,
            {"error": message, "code": "invalid-request"},
        )
        _, runs = await api.call("GET", "/api/runs", token=owner)
        assert runs == []


async def test_the_openapi_document_lists_the_runs_routes(platform: Platform) -> None:
    async with running(platform) as api:
        _, document = await api.call("GET", "/openapi.json")
    paths = document["paths"]
    assert set(paths["/api/runs"]) == {"get", "post"}
    assert set(paths["/api/runs/{run_id}"]) == {"get"}
    assert set(paths["/api/runs/{run_id}/tasks/{task_id}"]) == {"get"}
    assert set(paths["/api/agent-tasks/{task_id}/complete"]) == {"post"}


async def test_a_size_written_as_a_whole_float_is_an_integer(platform: Platform) -> None:
    """JSON Schema's integer is a number without a fraction: 3.0 is one, as the document says."""
    async with running(platform) as api:
        owner = await api.owner()
        body = {"goal": "x", "sizes": {"scouts": 3.0, "shortlist": 2}}
        status, created = await api.call("POST", "/api/runs", token=owner, json=body)
        assert status == 202, created
