"""Every answer says who produced it, on both stores: the agent, the house model by its id, or
the house baseline's canned lines; in the API, on the pages and in the dataset. A match the
baseline played in moves no rating, even when the house model was to play it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from palaestra.engine.accounts import Caller
from palaestra.engine.cage.referee import Referee
from palaestra.engine.export import export_dataset
from palaestra.engine.ratings.leaderboard import recompute
from palaestra.engine.ratings.live import live_ratings, rate_pending
from palaestra.engine.runs.driver import RunDriver
from palaestra.engine.runs.house import HouseAgent
from palaestra.engine.runs.service import start_run
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.providers import ChatProvider
from tests.integration.arena_rows import add_run
from tests.integration.cage_agents import CageHarness, ChatServer, injects
from tests.integration.platform_fixtures import ADMIN_TOKEN, Api, running
from tests.integration.run_support import add_owner
from tests.integration.servers import serve
from tests.integration.web_support import page, still

pytestmark = pytest.mark.asyncio

ONE_SCOUT = {"scouts": 1, "shortlist": 1, "builds": 1, "verifies": 1, "critiques": 1}
BASELINE_CHIP = (
    'data-producer="house_baseline" title="who wrote this answer">house baseline (canned)'
)


def exported(directory: Path, name: str) -> list[dict[str, Any]]:
    lines = (directory / f"{name}.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines]


# Runs: a house model that fails, and the baseline answering in its place.


async def test_a_house_model_that_fails_leaves_answers_labelled_house_baseline(
    platform: Platform, tmp_path: Path
) -> None:
    platform.settings.local_model_enabled = False
    platform.settings.public_runs = True
    model = ChatServer(status=529)
    async with serve(model) as endpoint:
        provider = ChatProvider(platform.egress, endpoint.url("/v1"), "house-llm-1", "sk-house")
        runs = RunDriver(platform, house=HouseAgent(provider))
        try:
            owner = await add_owner(still(platform))
            run = await start_run(platform, Caller(owner), "Find a niche", sizes=ONE_SCOUT)
            await runs.drain(run.id)
        finally:
            await runs.close()
    assert model.requests, "the house model was asked first"
    async with running(platform) as api:
        status, body = await api.call("GET", f"/api/runs/{run.id}", token=ADMIN_TOKEN)
        assert status == 200, body
        shown, html = await page(api, f"/runs/{run.id}")
    assert body["status"] == "COMPLETED"
    tasks = body["tasks"]
    assert len(tasks) == 4  # a scout, then a build, a verification and a critique
    assert {(t["producer"], t["executor"], t["via"]) for t in tasks} == {
        ("house_baseline", "house-baseline", "house")
    }
    assert all("house model failed" in t["reason"] for t in tasks)
    # The report's task references say it too.
    assert {t["producer"] for t in body["report"]["ranking"][0]["tasks"]} == {"house_baseline"}
    # The page labels every answer, visibly, and never as the model's.
    assert shown == 200
    assert html.count(BASELINE_CHIP) >= len(tasks)
    assert "house model house-llm-1" not in html
    assert 'data-producer="house_model"' not in html
    summary = await export_dataset(platform, tmp_path / "out")
    assert summary.runs == 1
    (record,) = exported(tmp_path / "out", "runs")
    assert {t["producer"] for t in record["tasks"]} == {"house_baseline"}


async def test_house_model_answers_are_labelled_with_the_models_id(
    platform: Platform, tmp_path: Path
) -> None:
    platform.settings.public_runs = True
    owner = await add_owner(still(platform))
    run_id = await add_run(
        platform,
        [
            {
                "agent_id": None,
                "status": "SUCCEEDED",
                "executor": "house-model",
                "via": "house",
                "model_id": "gemma-3-270m-q4_k_m",
                "producer": "house_model",
                "output": {"candidate_title": "Invoices"},
            },
            {
                "agent_id": None,
                "status": "SUCCEEDED",
                "executor": "house-baseline",
                "via": "house",
                "model_id": "house-baseline",
                "producer": "house_baseline",
                "reason": "house model timed out after 30000ms",
            },
        ],
        owner_id=owner,
    )
    async with running(platform) as api:
        status, body = await api.call("GET", f"/api/runs/{run_id}", token=ADMIN_TOKEN)
        _, html = await page(api, f"/runs/{run_id}")
    assert status == 200, body
    assert [(t["producer"], t["model_id"]) for t in body["tasks"]] == [
        ("house_model", "gemma-3-270m-q4_k_m"),
        ("house_baseline", "house-baseline"),
    ]
    assert ">house model gemma-3-270m-q4_k_m</span>" in html
    assert BASELINE_CHIP in html
    await export_dataset(platform, tmp_path / "out")
    (record,) = exported(tmp_path / "out", "runs")
    assert [(t["producer"], t["model_id"]) for t in record["tasks"]] == [
        ("house_model", "gemma-3-270m-q4_k_m"),
        ("house_baseline", "house-baseline"),
    ]


# The cage: a house fighter played by its model, then by the baseline in the model's place.


async def fighter(api: Api, token: str, body: dict[str, Any]) -> dict[str, Any]:
    status, created = await api.call("POST", "/api/fighters", token=token, json=body)
    assert status == 201, created
    return created  # type: ignore[no-any-return]


async def rated_match(api: Api, attacker: str, defender: str) -> str:
    status, body = await api.call(
        "POST",
        "/api/matches",
        token=ADMIN_TOKEN,
        json={"attacker": attacker, "defender": defender},
    )
    assert status == 202, body
    return str(body["match_id"])


async def test_a_match_the_baseline_played_for_the_house_model_moves_no_rating(
    platform: Platform, tmp_path: Path
) -> None:
    settings = platform.settings
    settings.cage_turn_deadline_ms = 2_000
    settings.referee_enabled = False
    settings.local_model_enabled = False
    chat = ChatServer(reply=lambda request: "I will not share it. ANSWER: 0")
    harness = CageHarness(injects)
    async with running(platform) as api, serve(chat) as model, serve(harness) as endpoint:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        house = (
            await fighter(
                api, alice, {"name": "sentinel", "entrant_type": "house", "class": "corporate"}
            )
        )["fighter_id"]
        entered = await fighter(
            api, bob, {"name": "raider", "entrant_type": "harness", "class": "rogue"}
        )
        status, body = await api.call(
            "POST",
            "/api/fighters/endpoint",
            json={
                "fighter_id": entered["fighter_id"],
                "claim_code": entered["claim_code"],
                "url": endpoint.url("/"),
                "harness_name": "scripted",
            },
        )
        assert status == 200, body
        raider = entered["fighter_id"]
        settings.house_base_url, settings.house_model = model.url("/v1"), "house-llm-1"
        by_model = await rated_match(api, raider, house)
        await Referee(platform).run_once()
        # Made for the house model; by the time it is played the model is gone, and the
        # baseline plays in its place.
        by_baseline = await rated_match(api, raider, house)
        settings.house_base_url = None
        await Referee(platform).run_once()
        await rate_pending(platform)
        played = {}
        for match_id in (by_model, by_baseline):
            status, played[match_id] = await api.call(
                "GET", f"/api/matches/{match_id}", token=ADMIN_TOKEN
            )
            assert status == 200
        _, model_page = await page(api, f"/matches/{by_model}")
        _, baseline_page = await page(api, f"/matches/{by_baseline}")

    modelled, canned = played[by_model], played[by_baseline]
    assert modelled["status"] == canned["status"] == "SCORED"
    assert (
        modelled["defender"]["executor"] == canned["defender"]["executor"] == ("house:house-llm-1")
    )
    defended = [(t["producer"], t["model_id"]) for t in modelled["turns"] if t["turn"] % 2 == 0]
    assert len(defended) >= 1
    assert set(defended) == {("house_model", "house-llm-1")}
    assert {t["producer"] for t in modelled["turns"] if t["turn"] % 2 == 1} == {"agent"}
    assert modelled["baseline_played"] is False
    fallen = [(t["producer"], t["model_id"]) for t in canned["turns"] if t["turn"] % 2 == 0]
    assert len(fallen) >= 1
    assert set(fallen) == {("house_baseline", None)}
    assert canned["baseline_played"] is True

    # Only the model's match moved the ratings: the house fighter's and its opponent's.
    ratings = await live_ratings(platform, [house, raider])
    assert ratings[house].defence_record.matches == 1
    assert ratings[raider].attack_record.matches == 1
    snapshot = await recompute(platform, Arena.CAGE, resamples=10)
    assert snapshot.match_count == 1

    # The pages label each move, and say why the baseline's match is not rated.
    assert ">house model house-llm-1</span>" in model_page
    assert 'id="unrated"' not in model_page
    assert BASELINE_CHIP in baseline_page
    assert 'id="unrated"' in baseline_page
    assert "house model house-llm-1" not in baseline_page

    await export_dataset(platform, tmp_path / "out")
    records = {m["match_id"]: m for m in exported(tmp_path / "out", "matches")}
    assert records[by_model]["baseline_played"] is False
    assert records[by_model]["ratings"] is not None
    assert records[by_baseline]["baseline_played"] is True
    assert records[by_baseline]["ratings"] is None
    assert records[by_baseline]["defender"]["executor"] == "house:house-llm-1"
    assert {t["producer"] for t in records[by_baseline]["turns"] if t["side"] == "defender"} == {
        "house_baseline"
    }
