"""The leaderboard page from snapshots published over rows written straight into the store."""

from __future__ import annotations

import itertools
import re

import pytest
from markupsafe import escape

from palaestra.engine.ratings.leaderboard import recompute
from palaestra.engine.ratings.live import rate_pending
from palaestra.platform import Platform
from palaestra.protocol.constants import Arena
from tests.integration.arena_rows import add_agent, add_fighter, add_matches, add_owner, add_run
from tests.integration.platform_fixtures import running
from tests.integration.web_support import HOSTILE, page, still

pytestmark = pytest.mark.asyncio


async def test_nothing_published_yet_is_said_plainly(platform: Platform) -> None:
    async with running(still(platform)) as api:
        status, body = await page(api, "/leaderboard")
    assert status == 200
    assert body.count("Not published yet") == 2  # cage and edgearena
    assert "Compared once the leaderboard is published" in body
    assert "No fighter yet" in body
    assert '<svg class="ci' not in body


async def cage_arena(platform: Platform) -> dict[str, str]:
    """Four fighters of three types and two classes, each of its own owner, and 60 matches."""
    specs = [
        (HOSTILE, "harness", "rogue"),
        ("tight-harness", "harness", "academic"),
        ("bare-model", "model", "academic"),
        ("house-sentinel", "house", "corporate"),
    ]
    ids = {}
    for name, kind, cls in specs:
        owner = await add_owner(platform, f"owner of {kind} {cls}")
        ids[name] = await add_fighter(platform, owner, name, entrant_type=kind, fighter_class=cls)
    outcomes = itertools.cycle(["attacker", "defender", "defender", "draw"])
    games = [
        (ids[attacker], ids[defender], next(outcomes))
        for attacker, defender in itertools.permutations(ids, 2)
        for _ in range(5)
    ]
    await add_matches(platform, games)
    return ids


async def test_the_cage_table_draws_intervals_and_filters(platform: Platform) -> None:
    still(platform).settings.leaderboard_resamples = 60
    ids = await cage_arena(platform)
    await rate_pending(platform)
    await recompute(platform, Arena.CAGE)
    async with running(platform) as api:
        status, body = await page(api, "/leaderboard")
        assert status == 200
        assert "from <strong>60</strong> scored matches" in body
        rows = re.findall(r'<tr data-fighter-row="([^"]*)"', body)
        assert sorted(rows) == sorted(str(escape(name)) for name in ids)
        # One bar per fighter, per entrant type and per difference of types.
        assert body.count('<svg class="ci ci-') == 4 + 3 + 3
        assert 'data-group="harness"' in body
        assert 'data-group="house"' in body
        assert 'data-difference="harness-model"' in body
        assert re.search(r'<td class="num rank[^"]*"[^>]*>1</td>', body)
        assert body.count("<tr data-live=") == 4
        assert "<script>alert" not in body
        assert str(escape(HOSTILE)) in body
        # The head-to-head grid: every pairing that met (not a fighter with itself), its five
        # matches as attacker wins - draws - defender wins.
        grid = body[body.index('<section class="card" id="head-to-head">') :]
        cells = re.findall(r"<text [^>]*>(\d+)\u2013(\d+)\u2013(\d+)</text>", grid)
        assert len(cells) == 4 * 3
        assert all(sum(map(int, cell)) == 5 for cell in cells)
        assert "Head to head: 4 attackers (rows) by 4 defenders" in grid

        _, house = await page(api, "/leaderboard?entrant_type=house")
        assert re.findall(r'<tr data-fighter-row="([^"]*)"', house) == ["house-sentinel"]
        assert '<option value="house" selected>' in house
        assert house.count("<tr data-live=") == 1

        _, academic = await page(api, "/leaderboard?class=academic")
        found = re.findall(r'<tr data-fighter-row="([^"]*)"', academic)
        assert sorted(found) == ["bare-model", "tight-harness"]
        assert "Head to head: 2 attackers (rows) by 2 defenders" in academic
        assert 'data-group="house"' not in academic  # the comparison within the class

        _, nobody = await page(api, "/leaderboard?entrant_type=model&class=rogue")
        assert "No rated fighter matches these filters" in nobody

        _, unknown = await page(api, "/leaderboard?entrant_type=%3Cscript%3E")
        assert len(re.findall(r'<tr data-fighter-row="', unknown)) == 4  # ignored
        assert "<script>" not in unknown


async def test_the_edgearena_table_ranks_agents_per_role(platform: Platform) -> None:
    owner = await add_owner(still(platform))
    scout = await add_agent(platform, owner, f"scout {HOSTILE}", "SCOUT", reputation=0.4)
    builder = await add_agent(platform, owner, "builder-forge", "BUILDER", reputation=-0.1)
    await add_run(
        platform,
        [
            {"agent_id": scout, "status": "SUCCEEDED", "latency_ms": 120.0, "contribution": 0.8},
            {"agent_id": scout, "status": "FAILED", "latency_ms": 30_000.0, "reason": "x"},
            {"agent_id": builder, "status": "SUCCEEDED", "latency_ms": 900.0, "contribution": 0.5},
        ],
    )
    await recompute(platform, Arena.EDGEARENA)
    async with running(platform) as api:
        status, body = await page(api, "/leaderboard")
    assert status == 200
    assert "from <strong>3</strong> finished tasks" in body
    assert f'<tr data-agent-row="scout {escape(HOSTILE)}">' in body
    assert '<tr data-agent-row="builder-forge">' in body
    assert "50%" in body  # the scout's validity rate
    assert "No ANALYST agent yet." in body
    assert f'href="/agents/{builder}"' in body
    assert "<script>alert" not in body
