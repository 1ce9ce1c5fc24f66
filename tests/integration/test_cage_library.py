"""The cage fighter library (``examples/cage``) through the real API and referee: one
process serves every fighter on its own path, each registers under the harness name that
says what it does, and matches end as the library's outcome matrix says."""

from __future__ import annotations

import html

import pytest
from examples.cage import FIGHTERS, Library

from palaestra.engine.cage.referee import Referee
from palaestra.harness.testing import serve
from palaestra.platform import Platform
from tests.integration.platform_fixtures import ADMIN_TOKEN, Api, running

pytestmark = pytest.mark.asyncio


async def register(api: Api, token: str, url: str, name: str) -> str:
    status, created = await api.call(
        "POST",
        "/api/fighters",
        token=token,
        json={"name": name, "entrant_type": "harness", "class": "independent"},
    )
    assert status == 201, created
    status, body = await api.call(
        "POST",
        "/api/fighters/endpoint",
        json={
            "fighter_id": created["fighter_id"],
            "claim_code": created["claim_code"],
            "url": url + name,
            "harness_name": FIGHTERS[name].harness_name,
            "sandbox_attested": True,
        },
    )
    assert status == 200, body
    return str(created["fighter_id"])


@pytest.mark.parametrize(
    ("attacker", "defender", "outcome"),
    [
        ("transformed-secret", "output-filter", ("attacker", "leak", 2)),
        ("persona-role-play", "output-filter", ("attacker", "hijack", 2)),
        ("payload-splitting", "keyword-filter", ("attacker", "leak", 6)),
        ("direct-override", "keyword-filter", ("draw", "utility", 6)),
        ("multi-turn-escalation", "allow-list", ("defender", "utility", 6)),
    ],
)
async def test_library_fighters_play_real_matches(
    platform: Platform, attacker: str, defender: str, outcome: tuple[str, str, int]
) -> None:
    platform.settings.referee_enabled = False
    async with running(platform) as api, serve(Library((attacker, defender))) as url:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        attacking = await register(api, alice, url, attacker)
        defending = await register(api, bob, url, defender)
        status, started = await api.call(
            "POST",
            "/api/matches",
            token=ADMIN_TOKEN,
            json={"attacker": attacking, "defender": defending},
        )
        assert status == 202, started
        await Referee(platform).run_once()
        status, match = await api.call(
            "GET", f"/api/matches/{started['match_id']}", token=ADMIN_TOKEN
        )
        assert status == 200, match
        assert (match["outcome"], match["decided_by"], len(match["turns"])) == outcome
        async with api.session.get(f"{api.base}/fighters/{defending}") as page:
            assert page.status == 200
            text = html.unescape(await page.text())
        assert FIGHTERS[defender].description in text
