"""What an agent sent with a failure is shown with care: the public pages and the public API
show the failure's kind and status only; its owner and the admin read the whole line, with
the obvious secrets redacted, on the agent's page (its token posted) and in its history."""

from __future__ import annotations

import re

import pytest

from palaestra.engine.agents.lifecycle import history
from palaestra.platform import Platform
from palaestra.rules.reasons import REASON_CAP
from tests.integration import arena_rows
from tests.integration.platform_fixtures import ADMIN_TOKEN, Api, running
from tests.integration.run_support import add_agent
from tests.integration.web_support import HTML, page

pytestmark = pytest.mark.asyncio

CONNECTION = "postgresql://app:hunter2@db.internal:5432/prod"
BODY = f'{{"error": "cannot reach {CONNECTION}", "auth": "Bearer sk-abcdefghijklmnopqrstu"}}'
REASON = f"External agent responded with 400: {BODY}"
OWNER_TOKEN = "pa_owner_alice-test-token"


async def failing_agent(platform: Platform) -> tuple[str, str]:
    """An owner's agent whose pings failed with a 400 carrying secrets; (its id, the token)."""
    owner_id = await arena_rows.add_owner(platform, "alice", token=OWNER_TOKEN)
    agent_id = await add_agent(platform, owner_id, "leaky", "SCOUT", "https://a.invalid/", "ea_k")
    async with platform.db.session() as session, session.begin():
        for _ in range(14):
            row = history(agent_id, platform.clock.now(), "ping", "failure", reason=REASON)
            row.latency_ms = 30.0
            session.add(row)
    return agent_id, OWNER_TOKEN


async def owner_view(api: Api, agent_id: str, token: str) -> tuple[int, str, str | None]:
    async with api.session.post(
        f"{api.base}/agents/{agent_id}",
        data={"token": token},
        headers={**HTML, "Origin": api.base},
    ) as response:
        return response.status, await response.text(), response.headers.get("Cache-Control")


async def test_public_pages_show_the_kind_and_status_only(platform: Platform) -> None:
    async with running(platform) as api:
        agent_id, _ = await failing_agent(platform)
        for path in (f"/agents/{agent_id}", "/", "/agents"):
            status, body = await page(api, path)
            assert status == 200, path
            assert "hunter2" not in body, path
            assert "db.internal" not in body, path
            assert "sk-abcdefghijklmnopqrstu" not in body, path
        status, body = await page(api, f"/agents/{agent_id}")
        assert body.count("External agent responded with 400</td>") == 14


async def test_the_owner_and_the_admin_read_the_whole_reason_redacted(platform: Platform) -> None:
    async with running(platform) as api:
        agent_id, token = await failing_agent(platform)
        for credential in (token, ADMIN_TOKEN):
            status, body, cache = await owner_view(api, agent_id, credential)
            assert status == 200, body[:300]
            assert cache == "no-store"
            assert 'data-audience="owner"' in body
            assert "cannot reach postgresql://[redacted]@db.internal:5432/prod" in body
            assert "auth&#34;: &#34;[redacted]&#34;" in body
            assert "hunter2" not in body
            assert "sk-abcdefghijklmnopqrstu" not in body
        other = await api.owner("mallory")
        status, body, _ = await owner_view(api, agent_id, other)
        assert status == 403
        assert "db.internal" not in body
        status, body, _ = await owner_view(api, agent_id, "pa_owner_guess")
        assert status == 401
        async with api.session.post(
            f"{api.base}/agents/{agent_id}",
            data={"token": token},
            headers={**HTML, "Origin": "https://evil.example"},
        ) as response:
            assert response.status == 403
            assert "db.internal" not in await response.text()


async def test_the_history_api_gives_the_owner_the_reason_redacted_and_capped(
    platform: Platform,
) -> None:
    async with running(platform) as api:
        agent_id, token = await failing_agent(platform)
        async with platform.db.session() as session, session.begin():
            long = "Validation failed: " + "password=letmein " + "x" * 3000
            session.add(history(agent_id, platform.clock.now(), "dispatch", "failure", reason=long))
        status, rows = await api.call("GET", f"/api/agents/{agent_id}/history", token=token)
    assert status == 200
    reasons = [row["reason"] for row in rows]
    assert len(reasons[0]) == REASON_CAP
    assert reasons[0].startswith("Validation failed: password=[redacted] xxx")
    assert reasons[1] == (
        'External agent responded with 400: {"error": "cannot reach '
        'postgresql://[redacted]@db.internal:5432/prod", "auth": "[redacted]"}'
    )
    assert not any("hunter2" in reason or "letmein" in reason for reason in reasons)
    assert all(re.search(r"sk-[a-z]{10}", reason) is None for reason in reasons)


async def test_a_match_shows_a_failed_turn_by_its_kind_on_the_page_and_the_api(
    platform: Platform,
) -> None:
    owner = await arena_rows.add_owner(platform, "alice")
    rival = await arena_rows.add_owner(platform, "bob")
    attacker = await arena_rows.add_fighter(platform, owner, "a")
    defender = await arena_rows.add_fighter(platform, rival, "d")
    failed = {"status": "FAILED", "message": None, "reason": f"model provider failed: {REASON}"}
    entrants = {
        side: {"fighter_id": fighter, "name": side, "executor": "harness"}
        for side, fighter in (("attacker", attacker), ("defender", defender))
    }
    match_id = await arena_rows.add_match(
        platform,
        attacker,
        defender,
        "attacker",
        decided_by="forfeit",
        turns=[{}, failed],
        material={"secret": {"access_code": "QUILL-0001-ZEBRA"}, "entrants": entrants},
    )
    async with running(platform) as api:
        status, body = await page(api, f"/matches/{match_id}")
        assert status == 200
        assert "model provider failed: External agent responded with 400" in body
        status, transcript = await api.call("GET", f"/api/matches/{match_id}")
    assert status == 200
    for text in (body, str(transcript)):
        assert "hunter2" not in text
        assert "db.internal" not in text
    assert transcript["turns"][1]["reason"] == (
        "model provider failed: External agent responded with 400"
    )
