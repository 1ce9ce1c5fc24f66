"""Guessing is slow: wrong tokens, agent keys and claim codes throttled per client address.

Real servers on 127.0.0.1; the Redis test shares one limit between two API processes.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import aiohttp
import pytest
import structlog.testing

from palaestra.app import create_app
from palaestra.platform import Platform
from tests.integration.edge_agents import EdgeAgent
from tests.integration.platform_fixtures import ADMIN_TOKEN, Api, running, serve_app
from tests.integration.servers import serve
from tests.integration.web_support import HTML

LIMIT = 5
WINDOW_S = 2
THROTTLED = {
    "error": "Too many failed authentications from this address; try again later",
    "code": "too-many-requests",
}


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    """The throttle does not depend on the store: SQLite only."""
    return f"sqlite+aiosqlite:///{tmp_path / 'palaestra.db'}"


@pytest.fixture
def throttled(platform: Platform) -> Platform:
    platform.settings.auth_throttle_failures = LIMIT
    platform.settings.auth_throttle_window_s = WINDOW_S
    return platform


async def call(
    api: Api, method: str, path: str, **kwargs: object
) -> tuple[int, str | None, object]:
    """(status, Retry-After, JSON body)."""
    async with api.session.request(method, api.base + path, **kwargs) as response:  # type: ignore[arg-type]
        body = await response.json() if response.content_type == "application/json" else None
        return response.status, response.headers.get("Retry-After"), body


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_wrong_tokens_are_throttled_and_a_right_one_works_after_the_window(
    throttled: Platform,
) -> None:
    async with running(throttled) as api:
        answers = [
            await call(api, "GET", "/api/agents", headers=bearer(f"pa_owner_guess{n}"))
            for n in range(20)
        ]
        statuses = [status for status, _, _ in answers]
        assert statuses == [401] * LIMIT + [429] * (20 - LIMIT)
        _, retry_after, body = answers[-1]
        assert body == THROTTLED
        assert retry_after is not None
        assert 1 <= int(retry_after) <= WINDOW_S
        # While held back, even the right token waits: the guesser learns nothing.
        assert (await call(api, "GET", "/api/agents", headers=bearer(ADMIN_TOKEN)))[0] == 429
        # A request that presents nothing is not held back.
        assert (await call(api, "GET", "/api/matches"))[0] == 200
        await asyncio.sleep(int(retry_after) + 0.2)
        assert (await call(api, "GET", "/api/agents", headers=bearer(ADMIN_TOKEN)))[0] == 200


async def test_wrong_tokens_sent_at_once_are_counted_as_they_come(throttled: Platform) -> None:
    """200 wrong tokens in one burst: at most the limit are looked up (401), the rest are
    refused (429) however the lookups interleave."""
    async with (
        running(throttled) as api,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session,
    ):
        burst = Api(api.base, session)
        answers = await asyncio.gather(
            *(call(burst, "GET", "/api/agents", headers=bearer(f"pa_g{n}")) for n in range(200))
        )
    statuses = [status for status, _, _ in answers]
    assert statuses.count(401) <= LIMIT
    assert statuses.count(429) == 200 - statuses.count(401)


async def test_right_tokens_sent_at_once_all_pass(throttled: Platform) -> None:
    async with running(throttled) as api:
        owner = await api.owner()
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            burst = Api(api.base, session)
            answers = await asyncio.gather(
                *(call(burst, "GET", "/api/agents", headers=bearer(owner)) for _ in range(200))
            )
    assert {status for status, _, _ in answers} == {200}


async def test_right_tokens_are_never_counted(throttled: Platform) -> None:
    async with running(throttled) as api:
        for _ in range(3 * LIMIT):
            assert (await call(api, "GET", "/api/agents", headers=bearer(ADMIN_TOKEN)))[0] == 200


async def test_a_limit_of_zero_turns_the_throttle_off(platform: Platform) -> None:
    platform.settings.auth_throttle_failures = 0
    async with running(platform) as api:
        for n in range(30):
            status, _, _ = await call(api, "GET", "/api/agents", headers=bearer(f"guess{n}"))
            assert status == 401


async def test_wrong_claim_codes_are_throttled(throttled: Platform) -> None:
    async with running(throttled) as api:
        owner = await api.owner("alice")
        status, created = await api.call(
            "POST",
            "/api/fighters",
            token=owner,
            json={"name": "f", "entrant_type": "harness", "class": "rogue"},
        )
        assert status == 201
        claims = [
            await call(
                api,
                "POST",
                "/api/fighters/endpoint",
                json={
                    "fighter_id": created["fighter_id"],
                    "claim_code": f"claim_guess{n}",
                    "url": "http://127.0.0.1:9/",
                    "harness_name": "h",
                    "sandbox_attested": False,
                },
            )
            for n in range(LIMIT + 2)
        ]
    assert [status for status, _, _ in claims] == [403] * LIMIT + [429, 429]
    assert claims[-1][2] == THROTTLED


async def test_one_fighters_claim_code_is_limited_across_addresses(throttled: Platform) -> None:
    throttled.settings.forwarded_allow_ips = ["127.0.0.1"]  # each guess from another client
    throttled.settings.auth_throttle_target_failures = 3
    async with running(throttled) as api:
        owner = await api.owner("alice")
        fighters = []
        for n in range(2):
            status, created = await api.call(
                "POST",
                "/api/fighters",
                token=owner,
                json={"name": f"f{n}", "entrant_type": "harness", "class": "rogue"},
            )
            assert status == 201
            fighters.append(created["fighter_id"])

        async def guess(fighter_id: str, n: int) -> tuple[int, str | None, object]:
            return await call(
                api,
                "POST",
                "/api/fighters/endpoint",
                headers={"X-Forwarded-For": f"198.51.100.{n}"},
                json={
                    "fighter_id": fighter_id,
                    "claim_code": f"claim_guess{n}",
                    "url": "http://127.0.0.1:9/",
                    "harness_name": "h",
                    "sandbox_attested": False,
                },
            )

        spread = [await guess(fighters[0], n) for n in range(5)]
        other = await guess(fighters[1], 9)
    assert [status for status, _, _ in spread] == [403, 403, 403, 429, 429]
    assert spread[-1][2] == {
        "error": "Too many failed authentications for this credential; try again later",
        "code": "too-many-requests",
    }
    assert spread[-1][1] is not None
    assert other[0] == 403  # another fighter's claim is not held back


async def test_wrong_agent_keys_are_throttled(throttled: Platform) -> None:
    async with running(throttled) as api:
        owner = await api.owner("alice")
        async with serve(EdgeAgent(key="")) as endpoint:
            status, created = await api.call(
                "POST",
                "/api/agents",
                token=owner,
                json={"name": "a", "role": "SCOUT", "endpoint_url": endpoint.url("/a")},
            )
            assert status == 201
            verify = f"/api/agents/{created['agent_id']}/verify"
            answers = [
                await call(api, "POST", verify, headers={"X-Agent-Key": f"ea_guess{n}"})
                for n in range(LIMIT + 2)
            ]
    assert [status for status, _, _ in answers] == [401] * LIMIT + [429, 429]


async def test_the_token_forms_of_the_web_pages_are_throttled(throttled: Platform) -> None:
    async with running(throttled) as api:
        missing = "01900000-0000-7000-8000-000000000000"
        pages = []
        forms = [
            # The registration form, the agent page's and the fighter page's count alike.
            ("/register", {"name": "a", "role": "SCOUT"}),
            (f"/agents/{missing}", {}),
            (f"/fighters/{missing}/rated-challenges", {"accepts": "yes"}),
        ]
        for n in range(LIMIT):
            path, form = forms[n % 3]
            async with api.session.post(
                api.base + path, data={"token": f"guess{n}", **form}, headers=HTML
            ) as response:
                pages.append(response.status)
        async with api.session.post(
            api.base + "/register", data={"token": ADMIN_TOKEN}, headers=HTML
        ) as response:
            held = response.status, response.headers.get("Retry-After"), await response.text()
    assert pages == [400, 401, 401, 400, 401]
    assert held[0] == 429
    assert held[1] is not None
    assert "Too many failed authentications" in held[2]


async def test_forwarded_for_counts_only_from_a_trusted_proxy(throttled: Platform) -> None:
    async def guesses(api: Api, client: str) -> list[int]:
        headers = {**bearer("pa_owner_guess"), "X-Forwarded-For": client}
        return [(await call(api, "GET", "/api/agents", headers=headers))[0] for _ in range(LIMIT)]

    async with running(throttled) as api:
        # Not trusted: a header naming a new client each time changes nothing.
        first = await guesses(api, "198.51.100.1")
        second = await guesses(api, "198.51.100.2")
    assert first == [401] * LIMIT
    assert second == [429] * LIMIT

    throttled.settings.forwarded_allow_ips = ["127.0.0.1"]
    async with running(throttled) as api:
        first = await guesses(api, "198.51.100.1")
        other = await guesses(api, "198.51.100.2")
        again = await guesses(api, "198.51.100.1")
    assert first == [401] * LIMIT
    assert other == [401] * LIMIT  # another client behind the same proxy
    assert again == [429] * LIMIT


@pytest.mark.redis
@pytest.mark.parametrize("setting", ["auth_throttle_url", "broker_url"])
async def test_in_redis_the_limit_holds_across_processes(
    throttled: Platform, redis_url: str, setting: str
) -> None:
    """Named for the throttle, or the broker's Redis when the processes are scaled out."""
    setattr(throttled.settings, setting, redis_url)
    throttled.settings.broker_queue = f"throttle-test-{uuid.uuid4().hex[:8]}"
    async with (
        serve_app(create_app(platform=throttled)) as one,
        serve_app(create_app(platform=throttled)) as two,
        aiohttp.ClientSession() as session,
    ):
        first, second = Api(one, session), Api(two, session)
        on_first = [
            (await call(first, "GET", "/api/agents", headers=bearer(f"g{n}")))[0]
            for n in range(LIMIT)
        ]
        started = time.monotonic()
        on_second = await call(second, "GET", "/api/agents", headers=bearer("g"))
    assert on_first == [401] * LIMIT
    assert on_second[0] == 429
    assert on_second[1] is not None
    assert time.monotonic() - started < WINDOW_S


@pytest.mark.redis
async def test_a_burst_of_requests_waits_for_the_throttles_redis_connections(
    throttled: Platform, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Far more requests at once than the throttle keeps Redis connections (two, here):
    every one is answered, none with a 500."""
    from palaestra import throttle

    monkeypatch.setattr(throttle, "REDIS_CONNECTIONS", 2)
    throttled.settings.auth_throttle_url = redis_url
    throttled.settings.broker_queue = f"throttle-test-{uuid.uuid4().hex[:8]}"
    with structlog.testing.capture_logs() as logs:
        async with running(throttled) as api:
            owner = await api.owner()
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
                burst = Api(api.base, session)
                statuses = await asyncio.gather(
                    *(call(burst, "GET", "/api/agents", headers=bearer(owner)) for _ in range(200))
                )
    assert {status for status, *_ in statuses} == {200}
    assert [e for e in logs if "throttle" in e["event"]] == []  # every request counted


async def test_an_unreachable_redis_lets_requests_through_and_says_so(
    throttled: Platform,
) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    throttled.settings.auth_throttle_url = f"redis://127.0.0.1:{port}/0"
    with structlog.testing.capture_logs() as logs:
        async with running(throttled) as api:
            owner = await api.owner()
            right = await call(api, "GET", "/api/agents", headers=bearer(owner))
            wrong = await call(api, "GET", "/api/agents", headers=bearer("nope"))
    assert (right[0], wrong[0]) == (200, 401)
    assert "the guessing throttle cannot reach Redis" in {entry["event"] for entry in logs}
