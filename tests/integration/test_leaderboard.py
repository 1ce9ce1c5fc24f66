"""Published leaderboards on both stores: snapshots, filters, live ratings, the worker, the API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from scipy.stats import spearmanr
from sqlalchemy import func, select

from palaestra.clock import FrozenClock
from palaestra.engine.ratings import leaderboard
from palaestra.engine.ratings.leaderboard import RatingsWorker, recompute, view
from palaestra.errors import InvalidRequest
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from palaestra.rules.ratings.bradley_terry import Strengths, simulate
from palaestra.store.rating_models import LeaderboardSnapshot
from tests.integration.arena_rows import (
    add_agent,
    add_fighter,
    add_match,
    add_matches,
    add_owner,
    add_run,
)
from tests.integration.platform_fixtures import ADMIN_TOKEN, running

pytestmark = pytest.mark.asyncio

TYPES = ("harness", "model", "house")
CLASSES = ("rogue", "academic")
OUTCOMES = {1.0: "attacker", 0.5: "draw", 0.0: "defender"}


async def cage(platform: Platform, fighters: int = 12, matches: int = 900) -> dict[str, float]:
    """Fighters of every type and two classes; matches drawn from known strengths.

    Harnesses are planted well above bare models, the house below; returns the
    true overall strength per fighter id.
    """
    rng = np.random.default_rng(3)
    shift = {"harness": 1.0, "model": 0.0, "house": -1.0}
    ids, labels = [], []
    for i in range(fighters):
        kind = TYPES[i % 3]
        owner = await add_owner(platform, f"owner-{i}")
        ids.append(
            await add_fighter(
                platform,
                owner,
                f"{kind}-{i:02d}",
                entrant_type=kind,
                fighter_class=CLASSES[(i // 3) % 2],
            )
        )
        labels.append(kind)
    base = np.array([shift[k] for k in labels])
    attack = base + rng.normal(0, 0.4, fighters)
    defence = base + rng.normal(0, 0.4, fighters)
    truth = Strengths(0.2, attack - attack.mean(), defence - defence.mean())
    attackers = rng.integers(0, fighters, matches)
    defenders = (attackers + rng.integers(1, fighters, matches)) % fighters
    scores = simulate(truth, attackers, defenders, rng)
    await add_matches(
        platform,
        [
            (ids[a], ids[d], OUTCOMES[float(s)])
            for a, d, s in zip(attackers, defenders, scores, strict=True)
        ],
    )
    return dict(zip(ids, truth.overall.tolist(), strict=True))


@pytest.fixture(autouse=True)
def few_resamples(platform: Platform) -> None:
    platform.settings.leaderboard_resamples = 60


async def test_the_published_table_ranks_by_interval_and_recovers_the_order(
    platform: Platform,
) -> None:
    truth = await cage(platform)
    snapshot = await recompute(platform, Arena.CAGE)
    assert snapshot.match_count == 900
    board = await view(platform, "cage")
    assert board["computed_at"] == snapshot.computed_at
    assert board["match_count"] == 900
    rows = board["fighters"]
    assert len(rows) == 12
    fitted = [r["overall"]["value"] for r in rows]
    assert fitted == sorted(fitted, reverse=True)
    assert spearmanr(fitted, [truth[r["fighter_id"]] for r in rows]).statistic > 0.8
    for row in rows:
        above = [
            other
            for other in rows
            if other["overall"]["low"] > row["overall"]["high"]  # wholly above
        ]
        assert row["rank"] == 1 + len(above)
        assert row["overall"]["low"] <= row["overall"]["value"] <= row["overall"]["high"]
        assert row["matches"]["attack"] > 0
    assert board["advantage"]["low"] <= board["advantage"]["value"] <= board["advantage"]["high"]
    assert board["method"]["resamples"] == 60


async def test_the_summary_compares_entrant_types(platform: Platform) -> None:
    await cage(platform)
    board = await view(platform, "cage")  # computed on demand: no snapshot yet
    groups = {g["group"]: g for g in board["summary"]}
    assert list(groups) == list(TYPES)
    assert groups["harness"]["fighters"] == 4
    assert groups["harness"]["overall"]["low"] > groups["model"]["overall"]["high"]
    differences = {(d["first"], d["second"]): d for d in board["differences"]}
    assert differences[("harness", "model")]["overall"]["low"] > 0
    assert differences[("model", "house")]["overall"]["low"] > 0


async def test_filters_narrow_the_rows_and_rank_again(platform: Platform) -> None:
    await cage(platform)
    await recompute(platform, Arena.CAGE)
    models = await view(platform, "cage", entrant_type="model")
    assert {r["entrant_type"] for r in models["fighters"]} == {"model"}
    assert min(r["rank"] for r in models["fighters"]) == 1
    assert {r["entrant_type"] for r in models["live"]} == {"model"}
    rogue = await view(platform, "cage", fighter_class="rogue")
    assert {r["class"] for r in rogue["fighters"]} == {"rogue"}
    assert sum(g["fighters"] for g in rogue["summary"]) == len(rogue["fighters"])
    both = await view(platform, "cage", entrant_type="house", fighter_class="academic")
    assert {(r["entrant_type"], r["class"]) for r in both["fighters"]} == {("house", "academic")}
    assert (await view(platform, "cage", entrant_type="nobody"))["fighters"] == []


@pytest.mark.parametrize(
    ("arena", "filters", "message"),
    [
        ("chess", {}, "arena must be cage or edgearena"),
        ("cage", {"role": "SCOUT"}, "role filters the edgearena leaderboard"),
        ("edgearena", {"entrant_type": "model"}, "filter the cage leaderboard"),
    ],
)
async def test_invalid_requests(
    platform: Platform, arena: str, filters: Mapping[str, Any], message: str
) -> None:
    with pytest.raises(InvalidRequest, match=message):
        await view(platform, arena, **filters)


async def test_a_side_never_played_has_no_interval(platform: Platform) -> None:
    a = await add_fighter(platform, await add_owner(platform, "a"), "always-attacks")
    b = await add_fighter(platform, await add_owner(platform, "b"), "always-defends")
    for outcome in ("attacker", "defender", "draw"):
        await add_match(platform, a, b, outcome)
    board = await view(platform, "cage")
    rows = {r["name"]: r for r in board["fighters"]}
    assert rows["always-attacks"]["defence"] is None
    assert rows["always-attacks"]["overall"] is None
    assert rows["always-attacks"]["attack"] is not None
    assert rows["always-defends"]["attack"] is None
    assert {r["rank"] for r in board["fighters"]} == {None}  # no overall strength, no rank


async def test_live_table_orders_by_the_conservative_estimate(platform: Platform) -> None:
    strong = await add_fighter(platform, await add_owner(platform, "s"), "strong")
    weak = await add_fighter(platform, await add_owner(platform, "w"), "weak")
    await add_fighter(platform, await add_owner(platform, "n"), "newcomer")
    await add_fighter(platform, await add_owner(platform, "p"), "pending", status="PENDING")
    for _ in range(6):
        await add_match(platform, strong, weak, "attacker")
        await add_match(platform, weak, strong, "defender")
    await RatingsWorker(platform).run_once()
    board = await view(platform, "cage")
    live = board["live"]
    assert [r["name"] for r in live] == ["strong", "newcomer", "weak"]  # pending: not listed
    assert [r["rank"] for r in live] == [1, 2, 3]
    top = live[0]
    assert top["attack"]["wins"] == 6
    assert top["defence"]["wins"] == 6
    assert top["attack"]["conservative"] == pytest.approx(
        top["attack"]["mu"] - 3 * top["attack"]["sigma"]
    )
    newcomer = live[1]
    assert newcomer["attack"]["matches"] == 0
    assert newcomer["score"] == pytest.approx(0.0)


async def test_the_worker_publishes_when_due_and_only_then(
    platform: Platform, clock: FrozenClock
) -> None:
    platform.settings.leaderboard_interval_s = 600.0
    await cage(platform, fighters=6, matches=60)
    worker = RatingsWorker(platform)
    await worker.run_once()
    first = await leaderboard.latest(platform, Arena.CAGE)
    assert first is not None
    assert first.match_count == 60
    assert await leaderboard.latest(platform, Arena.EDGEARENA) is not None
    clock.advance(599)
    await worker.run_once()
    again = await leaderboard.latest(platform, Arena.CAGE)
    assert again is not None
    assert again.computed_at == first.computed_at
    clock.advance(2)
    await worker.run_once()
    later = await leaderboard.latest(platform, Arena.CAGE)
    assert later is not None
    assert later.computed_at > first.computed_at


async def test_only_on_demand_when_the_interval_is_zero(platform: Platform) -> None:
    platform.settings.leaderboard_interval_s = 0.0
    await RatingsWorker(platform).run_once()
    assert await leaderboard.latest(platform, Arena.CAGE) is None


async def test_old_snapshots_are_pruned(platform: Platform, clock: FrozenClock) -> None:
    platform.settings.retention_leaderboard_snapshots = 4
    for _ in range(4 + 3):
        clock.advance(1)
        await recompute(platform, Arena.CAGE)
    await recompute(platform, Arena.EDGEARENA)
    async with platform.db.session() as session:
        counts = dict(
            (
                await session.execute(
                    select(LeaderboardSnapshot.arena, func.count()).group_by(
                        LeaderboardSnapshot.arena
                    )
                )
            ).all()
        )
    assert counts == {"cage": 4, "edgearena": 1}


async def test_the_edgearena_table(platform: Platform) -> None:
    owner = await add_owner(platform)
    best = await add_agent(platform, owner, "best-scout", "SCOUT", reputation=0.9)
    other = await add_agent(platform, owner, "other-scout", "SCOUT", reputation=0.4)
    builder = await add_agent(platform, owner, "builder", "BUILDER", reputation=0.1)
    await add_run(
        platform,
        [
            {"agent_id": best, "status": "SUCCEEDED", "latency_ms": 100.0, "contribution": 0.9},
            {"agent_id": best, "status": "SUCCEEDED", "latency_ms": 300.0, "contribution": 0.7},
            {"agent_id": other, "status": "FAILED", "latency_ms": 900.0, "contribution": 0.0},
            {"agent_id": other, "status": "RUNNING"},
            {"agent_id": None, "status": "SUCCEEDED", "executor": "house-baseline"},
            {"agent_id": builder, "status": "TIMEOUT", "phase": "BUILD"},
        ],
    )
    board = await view(platform, "edgearena")
    assert board["match_count"] == 4  # finished tasks of agents
    rows = {r["name"]: r for r in board["agents"]}
    assert [(r["role"], r["rank"], r["name"]) for r in board["agents"]] == [
        ("BUILDER", 1, "builder"),
        ("SCOUT", 1, "best-scout"),
        ("SCOUT", 2, "other-scout"),
    ]
    assert rows["best-scout"]["validity_rate"] == 1.0
    assert rows["best-scout"]["latency_p50_ms"] == pytest.approx(200.0)
    assert rows["best-scout"]["contribution_mean"] == pytest.approx(0.8)
    assert rows["other-scout"]["tasks"] == 1
    assert rows["builder"]["validity_rate"] == 0.0
    scouts = await view(platform, "edgearena", role="SCOUT")
    assert {r["role"] for r in scouts["agents"]} == {"SCOUT"}
    async with running(platform) as api:
        status, body = await api.call("GET", "/api/leaderboard?arena=edgearena&role=SCOUT")
    assert status == 200, body
    assert body["agents"] == scouts["agents"]  # the rows as ranked, every field published


async def test_the_api(platform: Platform) -> None:
    await cage(platform, fighters=6, matches=120)
    async with running(platform) as api:
        status, body = await api.call("GET", "/api/leaderboard")
        assert status == 200, body
        assert body["arena"] == "cage"
        assert body["match_count"] == 120
        assert len(body["fighters"]) == 6
        assert {"rank", "fighter_id", "name", "entrant_type", "class", "overall"} <= set(
            body["fighters"][0]
        )
        assert [g["group"] for g in body["summary"]] == list(TYPES)
        assert len(body["live"]) == 6

        status, body = await api.call("GET", "/api/leaderboard?entrant_type=harness&class=rogue")
        assert status == 200, body
        assert body["filters"] == {"entrant_type": "harness", "class": "rogue", "role": None}
        assert {(r["entrant_type"], r["class"]) for r in body["fighters"]} == {("harness", "rogue")}

        status, body = await api.call("GET", "/api/leaderboard?arena=edgearena")
        assert status == 200, body
        assert body["agents"] == []
        assert body["fighters"] == []

        status, body = await api.call("GET", "/api/leaderboard?arena=chess")
        assert status == 422  # the schema names the arenas
        assert body == {
            "error": "query.arena: Input should be 'cage' or 'edgearena'",
            "code": "invalid-request",
        }

        status, body = await api.call("POST", "/api/leaderboard/recompute")
        assert status == 401, body
        owner = await api.owner()
        status, body = await api.call("POST", "/api/leaderboard/recompute", token=owner)
        assert status == 403, body
        status, body = await api.call(
            "POST", "/api/leaderboard/recompute?arena=cage", token=ADMIN_TOKEN
        )
        assert status == 200, body
        assert body["arena"] == "cage"
        assert body["match_count"] == 120

        status, body = await api.call("GET", "/openapi.json")
        assert "/api/leaderboard" in body["paths"]


async def test_the_matchmaking_switch(platform: Platform) -> None:
    async with running(platform) as api:
        status, body = await api.call("GET", "/api/matchmaking", token=ADMIN_TOKEN)
        assert status == 200, body
        assert body == {"enabled": False, "paused": False, "scheduling": False, "open_matches": 0}
        platform.settings.matchmaking_enabled = True
        status, body = await api.call("GET", "/api/matchmaking", token=ADMIN_TOKEN)
        assert body == {"enabled": True, "paused": False, "scheduling": True, "open_matches": 0}
        status, body = await api.call("POST", "/api/matchmaking/pause", token=ADMIN_TOKEN)
        assert body["paused"] is True
        assert body["scheduling"] is False
        status, body = await api.call("GET", "/api/matchmaking", token=ADMIN_TOKEN)
        assert body["paused"] is True
        status, body = await api.call("POST", "/api/matchmaking/resume", token=ADMIN_TOKEN)
        assert body["paused"] is False
        owner = await api.owner()
        status, _ = await api.call("POST", "/api/matchmaking/pause", token=owner)
        assert status == 403
