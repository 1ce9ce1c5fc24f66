"""The API's fixed contract (spec/API.md), through the real server, on both stores.

Who may call what, keys shown once and kept sealed, the seed's verify,
pause and resume, JSON errors for everything that goes wrong, and the
system routes.
"""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import structlog.testing
from cryptography.fernet import Fernet
from sqlalchemy import text

from palaestra.engine.agents.health import HealthMonitor
from palaestra.platform import Platform
from palaestra.store import db
from tests.integration.edge_agents import EdgeAgent
from tests.integration.platform_fixtures import ADMIN_TOKEN, Api, running
from tests.integration.servers import serve

pytestmark = pytest.mark.asyncio

#: An id no agent has (UUIDv7-shaped, so nothing can reject it for its form).
MISSING_ID = "01900000-0000-7000-8000-000000000000"

#: Every agent route an owner uses, as (method, suffix after /api/agents/{agent_id}).
OWNER_ROUTES = [
    ("GET", ""),
    ("GET", "/history"),
    ("POST", "/wizard"),
    ("POST", "/pause"),
    ("POST", "/resume"),
    ("POST", "/rotate-key"),
]

MISSING_TOKEN = {"error": "Missing bearer token", "code": "unauthorized"}
INVALID_TOKEN = {"error": "Invalid bearer token", "code": "unauthorized"}
BAD_AGENT_KEY = {"error": "Invalid or missing X-Agent-Key header", "code": "unauthorized"}


def not_found(agent_id: str) -> dict[str, str]:
    return {"error": f"Agent {agent_id} not found", "code": "not-found"}


async def register(api: Api, token: str, url: str, name: str = "agent") -> dict[str, Any]:
    status, body = await api.call(
        "POST",
        "/api/agents",
        token=token,
        json={"name": name, "role": "SCOUT", "endpoint_url": url},
    )
    assert status == 201, body
    return body  # type: ignore[no-any-return]


async def pass_wizard(api: Api, token: str, agent: EdgeAgent, created: dict[str, Any]) -> None:
    agent.key = created["api_key"]
    status, result = await api.call(
        "POST", f"/api/agents/{created['agent_id']}/wizard", token=token
    )
    assert (status, result["passed"], result["status"]) == (200, True, "ACTIVE"), result


async def stored(platform: Platform, agent_id: str) -> dict[str, Any]:
    """The agent's row as the database holds it, read with plain SQL."""
    async with platform.db.session() as session:
        row = (
            await session.execute(text("SELECT * FROM agents WHERE id = :id"), {"id": agent_id})
        ).one()
    return dict(row._mapping)


async def set_state(platform: Platform, agent_id: str, **values: Any) -> None:
    assignments = ", ".join(f"{column} = :{column}" for column in values)
    async with platform.db.session() as session, session.begin():
        await session.execute(
            text(f"UPDATE agents SET {assignments} WHERE id = :id"),  # noqa: S608 (test's own names)
            {**values, "id": agent_id},
        )


def unsealed(platform: Platform, sealed: str) -> str:
    """Decrypt with the configured secret directly, not through the platform's vault."""
    secret = platform.settings.secret_key
    assert secret is not None
    return Fernet(secret.get_secret_value().encode()).decrypt(sealed.encode()).decode()


async def status_rows(api: Api, token: str, agent_id: str) -> list[tuple[str, str | None]]:
    status, history = await api.call("GET", f"/api/agents/{agent_id}/history", token=token)
    assert status == 200, history
    return [(row["outcome"], row["reason"]) for row in history if row["kind"] == "status"]


# Who may call what.


@pytest.mark.parametrize(("method", "suffix"), OWNER_ROUTES)
async def test_an_agent_route_answers_other_owners_404_and_strangers_401(
    platform: Platform, method: str, suffix: str
) -> None:
    async with running(platform) as api:
        alice = await api.owner("alice")
        mallory = await api.owner("mallory")
        async with serve(EdgeAgent(key="")) as endpoint:
            created = await register(api, alice, endpoint.url("/a"))
            agent_id = created["agent_id"]
            path = f"/api/agents/{agent_id}{suffix}"
            reached = len(endpoint.received)

            # Another owner learns nothing: the answer is that of an agent that does not exist.
            assert await api.call(method, path, token=mallory) == (404, not_found(agent_id))
            assert await api.call(method, f"/api/agents/{MISSING_ID}{suffix}", token=mallory) == (
                404,
                not_found(MISSING_ID),
            )
            assert await api.call(method, path) == (401, MISSING_TOKEN)
            assert await api.call(method, path, token="pa_owner_forged") == (401, INVALID_TOKEN)
            assert await api.call(method, path, headers={"Authorization": f"Basic {alice}"}) == (
                401,
                MISSING_TOKEN,
            )
            assert endpoint.received[reached:] == []

    row = await stored(platform, agent_id)
    assert (row["status"], row["paused_from"]) == ("PENDING", None)
    assert unsealed(platform, row["key_sealed"]) == created["api_key"]


async def test_listing_shows_an_owner_its_own_agents_and_the_admin_all(
    platform: Platform,
) -> None:
    async with running(platform) as api:
        alice = await api.owner("alice")
        bob = await api.owner("bob")
        carol = await api.owner("carol")
        async with serve(EdgeAgent(key="")) as endpoint:
            alices = {(await register(api, alice, endpoint.url("/a"), n))["agent_id"] for n in "12"}
            bobs = {(await register(api, bob, endpoint.url("/b"), "3"))["agent_id"]}

        listings = {}
        for who, token in {
            "alice": alice,
            "bob": bob,
            "carol": carol,
            "admin": ADMIN_TOKEN,
        }.items():
            status, body = await api.call("GET", "/api/agents", token=token)
            assert status == 200, body
            listings[who] = {row["agent_id"] for row in body}
        assert listings == {"alice": alices, "bob": bobs, "carol": set(), "admin": alices | bobs}

        (bobs_agent,) = bobs
        status, body = await api.call("GET", f"/api/agents/{bobs_agent}", token=ADMIN_TOKEN)
        assert (status, body["agent_id"]) == (200, bobs_agent)
        assert await api.call("GET", "/api/agents") == (401, MISSING_TOKEN)


@pytest.mark.parametrize("action", ["hold", "release"])
async def test_hold_and_release_are_for_the_admin_only(platform: Platform, action: str) -> None:
    admin_only = {"error": "hold and release are admin actions", "code": "forbidden"}
    async with running(platform) as api:
        alice = await api.owner("alice")
        mallory = await api.owner("mallory")
        async with serve(EdgeAgent(key="")) as endpoint:
            agent_id = (await register(api, alice, endpoint.url("/a")))["agent_id"]
        if action == "release":
            status, body = await api.call("POST", f"/api/agents/{agent_id}/hold", token=ADMIN_TOKEN)
            assert (status, body["hold"]) == (200, True)
        held_before = action == "release"
        path = f"/api/agents/{agent_id}/{action}"

        assert await api.call("POST", path, token=alice) == (403, admin_only)
        assert await api.call("POST", path, token=mallory) == (403, admin_only)
        assert await api.call("POST", path) == (401, MISSING_TOKEN)
        assert await api.call("POST", path, token="nope") == (401, INVALID_TOKEN)
        _, seen = await api.call("GET", f"/api/agents/{agent_id}", token=alice)
        assert seen["hold"] is held_before

        status, body = await api.call("POST", path, token=ADMIN_TOKEN)
        assert status == 200, body
        assert (body["agent_id"], body["hold"], body["status"]) == (
            agent_id,
            not held_before,
            "PENDING",
        )
        _, seen = await api.call("GET", f"/api/agents/{agent_id}", token=alice)
        assert seen["hold"] is (not held_before)
        _, history = await api.call("GET", f"/api/agents/{agent_id}/history", token=alice)
        holds = [row["outcome"] for row in history if row["kind"] == "hold"]
        assert holds == (["released", "set"] if held_before else ["set"])


async def test_only_the_admin_creates_owners(platform: Platform) -> None:
    admin_only = {"error": "admin token required", "code": "forbidden"}
    async with running(platform) as api:
        alice = await api.owner("alice")
        new = {"name": "eve"}
        assert await api.call("POST", "/api/owners", token=alice, json=new) == (403, admin_only)
        assert await api.call("POST", "/api/owners", json=new) == (401, MISSING_TOKEN)
        assert await api.call("POST", "/api/owners", token="x", json=new) == (401, INVALID_TOKEN)

        status, body = await api.call("POST", "/api/owners", token=ADMIN_TOKEN, json=new)
        assert status == 201, body
        assert set(body) == {"owner_id", "token"}
        assert body["token"].startswith("pa_owner_")
        assert await api.call("GET", "/api/agents", token=body["token"]) == (200, [])
    async with platform.db.session() as session:
        names = (await session.execute(text("SELECT name, token_hash FROM owners"))).all()
    assert sorted(name for name, _ in names) == ["alice", "eve"]
    assert all(body["token"] not in token_hash for _, token_hash in names)


# Registration.


async def test_an_owner_cannot_register_two_agents_or_two_fighters_of_one_name(
    platform: Platform,
) -> None:
    async with running(platform) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        async with serve(EdgeAgent(key="")) as endpoint:
            url = endpoint.url("/a")
            first = await register(api, alice, url, name="Scout One")
            probes = len(endpoint.received)
            again = {"name": "scout one", "role": "BUILDER", "endpoint_url": url}
            status, body = await api.call("POST", "/api/agents", token=alice, json=again)
            assert (status, body["code"]) == (409, "conflict"), body
            assert body["error"] == (
                f"You already have an agent named 'scout one' ({first['agent_id']}); "
                "give this one another name"
            )
            assert len(endpoint.received) == probes  # refused before the endpoint is probed
            await register(api, bob, url, name="Scout One")  # another owner's name is its own
        fighter = {"name": "Scout One", "entrant_type": "house", "class": "academic"}
        status, body = await api.call("POST", "/api/fighters", token=alice, json=fighter)
        assert status == 201, body  # a fighter is in the other arena
        status, body = await api.call("POST", "/api/fighters", token=alice, json=fighter)
        assert (status, body["code"]) == (409, "conflict"), body
        assert "You already have a fighter named 'Scout One'" in body["error"]


async def test_registration_takes_the_seeds_endpointUrl_as_well_as_endpoint_url(
    platform: Platform,
) -> None:
    async with running(platform) as api:
        alice = await api.owner("alice")
        async with serve(EdgeAgent(key="")) as endpoint:
            url = endpoint.url("/a")
            created = {}
            for spelling in ("endpoint_url", "endpointUrl"):
                status, body = await api.call(
                    "POST",
                    "/api/agents",
                    token=alice,
                    json={"name": spelling, "role": "SCOUT", spelling: url},
                )
                assert status == 201, body
                assert (body["status"], body["probe"]["passed"]) == ("PENDING", True), body
                created[spelling] = body["agent_id"]
            probes = len(endpoint.received)

            refused = [
                (
                    {"name": "both", "role": "SCOUT", "endpoint_url": url, "endpointUrl": url},
                    "give endpoint_url or endpointUrl, not both",
                ),
                ({"name": "neither", "role": "SCOUT"}, "endpoint_url: Field required"),
                (
                    {"name": "empty", "role": "SCOUT", "endpointUrl": ""},
                    "endpointUrl: String should have at least 1 character",
                ),
            ]
            for body, error in refused:
                assert await api.call("POST", "/api/agents", token=alice, json=body) == (
                    422,
                    {"error": error, "code": "invalid-request"},
                )
            assert len(endpoint.received) == probes  # nothing refused was probed

        _, agents = await api.call("GET", "/api/agents", token=alice)
        assert {(a["agent_id"], a["endpoint_url"]) for a in agents} == {
            (created["endpoint_url"], url),
            (created["endpointUrl"], url),
        }
        _, document = await api.call("GET", "/openapi.json")
    schema = document["components"]["schemas"]["NewAgent"]
    assert "endpoint_url" in schema["required"]
    assert "endpointUrl" in schema["properties"]["endpoint_url"]["description"]


# Keys.


async def test_an_agent_key_is_shown_at_registration_and_rotation_only_and_kept_sealed(
    platform: Platform,
) -> None:
    async with running(platform) as api:
        alice = await api.owner("alice")
        agent = EdgeAgent(key="")
        async with serve(agent) as endpoint:
            created = await register(api, alice, endpoint.url("/a"))
            agent_id, first_key = created["agent_id"], created["api_key"]
            assert first_key.startswith("ea_")
            await pass_wizard(api, alice, agent, created)

            async def shown_anywhere(key: str) -> list[str]:
                paths = [
                    "/api/agents",
                    f"/api/agents/{agent_id}",
                    f"/api/agents/{agent_id}/history",
                ]
                found = []
                for path in paths:
                    for token in (alice, ADMIN_TOKEN):
                        status, body = await api.call("GET", path, token=token)
                        assert status == 200, body
                        if key in orjson.dumps(body).decode():
                            found.append(path)
                return found

            assert await shown_anywhere(first_key) == []
            row = await stored(platform, agent_id)
            assert first_key not in row["key_sealed"]
            assert unsealed(platform, row["key_sealed"]) == first_key

            status, rotated = await api.call(
                "POST", f"/api/agents/{agent_id}/rotate-key", token=alice
            )
            assert status == 200, rotated
            assert set(rotated) == {"api_key"}
            new_key = rotated["api_key"]
            assert new_key.startswith("ea_")
            assert new_key != first_key
            assert await shown_anywhere(new_key) == []
            row = await stored(platform, agent_id)
            assert new_key not in row["key_sealed"]
            assert unsealed(platform, row["key_sealed"]) == new_key

            verify = f"/api/agents/{agent_id}/verify"
            assert await api.call("POST", verify, headers={"X-Agent-Key": first_key}) == (
                401,
                BAD_AGENT_KEY,
            )
            assert agent.ledger.gets == ["EdgeArena-Ping/1.0"]  # the refused verify sent nothing
            assert await api.call("POST", verify, headers={"X-Agent-Key": new_key}) == (
                200,
                {"status": "ACTIVE"},
            )
            assert agent.ledger.gets == ["EdgeArena-Ping/1.0", "EdgeArena-Verify/1.0"]

        _, history = await api.call("GET", f"/api/agents/{agent_id}/history", token=alice)
        assert [(r["kind"], r["outcome"]) for r in history if r["kind"] == "key"] == [
            ("key", "rotated")
        ]


# The seed's verify.


async def test_verify_needs_the_agent_key(platform: Platform) -> None:
    async with running(platform) as api:
        alice = await api.owner("alice")
        agent = EdgeAgent(key="")
        async with serve(agent) as endpoint:
            created = await register(api, alice, endpoint.url("/a"))
            agent_id = created["agent_id"]
            verify = f"/api/agents/{agent_id}/verify"
            assert await api.call("POST", verify) == (401, BAD_AGENT_KEY)
            assert await api.call("POST", verify, headers={"X-Agent-Key": ""}) == (
                401,
                BAD_AGENT_KEY,
            )
            assert await api.call("POST", verify, headers={"X-Agent-Key": "ea_wrong"}) == (
                401,
                BAD_AGENT_KEY,
            )
            # The owner's bearer token is not the agent's key.
            assert await api.call("POST", verify, token=alice) == (401, BAD_AGENT_KEY)
            assert await api.call(
                "POST",
                f"/api/agents/{MISSING_ID}/verify",
                headers={"X-Agent-Key": created["api_key"]},
            ) == (404, not_found(MISSING_ID))
            assert agent.ledger.gets == ["EdgeArena-Ping/1.0"]  # only the registration probe
        _, history = await api.call("GET", f"/api/agents/{agent_id}/history", token=alice)
        assert [row["kind"] for row in history] == ["probe"]


async def test_verify_does_not_admit_a_pending_agent(platform: Platform) -> None:
    """Only the wizard admits an agent; verify checks reachability and leaves PENDING alone."""
    async with running(platform) as api:
        alice = await api.owner("alice")
        agent = EdgeAgent(key="")
        async with serve(agent) as endpoint:
            created = await register(api, alice, endpoint.url("/a"))
            agent_id = created["agent_id"]
            status, body = await api.call(
                "POST",
                f"/api/agents/{agent_id}/verify",
                headers={"X-Agent-Key": created["api_key"]},
            )
            assert (status, body) == (200, {"status": "PENDING"})
            assert agent.ledger.gets == ["EdgeArena-Ping/1.0", "EdgeArena-Verify/1.0"]
        _, history = await api.call("GET", f"/api/agents/{agent_id}/history", token=alice)
        assert [(row["kind"], row["outcome"]) for row in history] == [
            ("verify", "success"),
            ("probe", "success"),
        ]
        assert (await stored(platform, agent_id))["status"] == "PENDING"


async def test_verify_brings_a_suspended_agent_back_and_keeps_a_hold(platform: Platform) -> None:
    async with running(platform) as api:
        alice = await api.owner("alice")
        agent = EdgeAgent(key="")
        monitor = HealthMonitor(platform)
        async with serve(agent) as endpoint:
            created = await register(api, alice, endpoint.url("/a"))
            agent_id = created["agent_id"]
            await pass_wizard(api, alice, agent, created)

            agent.failing = True
            for _ in range(9):
                platform.clock.advance(300)  # type: ignore[attr-defined]
                assert await monitor.run_once() == 1
            _, seen = await api.call("GET", f"/api/agents/{agent_id}", token=alice)
            assert (seen["status"], seen["consecutive_failures"]) == ("SUSPENDED", 9)
            platform.clock.advance(300)  # type: ignore[attr-defined]
            assert await monitor.run_once() == 0  # a suspended agent is not pinged

            agent.failing = False
            status, held = await api.call("POST", f"/api/agents/{agent_id}/hold", token=ADMIN_TOKEN)
            assert (status, held["hold"]) == (200, True)
            assert await api.call(
                "POST",
                f"/api/agents/{agent_id}/verify",
                headers={"X-Agent-Key": created["api_key"]},
            ) == (200, {"status": "ACTIVE"})

        _, seen = await api.call("GET", f"/api/agents/{agent_id}", token=alice)
        assert (seen["status"], seen["consecutive_failures"], seen["hold"]) == ("ACTIVE", 0, True)
        assert (await status_rows(api, alice, agent_id))[0] == (
            "ACTIVE",
            "SUSPENDED -> ACTIVE (verified by owner)",
        )


async def test_a_failed_verify_says_why_and_counts_as_a_failure(platform: Platform) -> None:
    async with running(platform) as api:
        alice = await api.owner("alice")
        agent = EdgeAgent(key="")
        async with serve(agent) as endpoint:
            created = await register(api, alice, endpoint.url("/a"))
            agent_id = created["agent_id"]
            await set_state(platform, agent_id, status="SUSPENDED", consecutive_failures=9)
            agent.failing = True
            status, body = await api.call(
                "POST",
                f"/api/agents/{agent_id}/verify",
                headers={"X-Agent-Key": created["api_key"]},
            )
        assert (status, body) == (
            400,
            {
                "error": "Verify failed: External agent responded with 503: "
                '{"error": "upstream down"}',
                "code": "invalid-request",
            },
        )
        _, seen = await api.call("GET", f"/api/agents/{agent_id}", token=alice)
        # Still suspended, one more failure counted: verify is one of the seed's liveness calls.
        assert (seen["status"], seen["consecutive_failures"]) == ("SUSPENDED", 10)
        _, history = await api.call("GET", f"/api/agents/{agent_id}/history", token=alice)
        assert (history[0]["kind"], history[0]["outcome"]) == ("verify", "failure")


# Pause and resume.


@pytest.mark.parametrize(
    ("before", "failures"),
    [("PENDING", 0), ("ACTIVE", 0), ("DEGRADED", 4), ("PROBATION", 7), ("SUSPENDED", 9)],
)
async def test_pause_then_resume_returns_to_the_status_held_before(
    platform: Platform, before: str, failures: int
) -> None:
    async with running(platform) as api:
        alice = await api.owner("alice")
        async with serve(EdgeAgent(key="")) as endpoint:
            created = await register(api, alice, endpoint.url("/a"))
        agent_id = created["agent_id"]
        await set_state(platform, agent_id, status=before, consecutive_failures=failures)
        expected = {
            "agent_id": agent_id,
            "name": "agent",
            "arena": "edgearena",
            "role": "SCOUT",
            "endpoint_url": endpoint.url("/a"),
            "status": "PAUSED",
            "consecutive_failures": failures,
            "cooldown_until": None,
            "last_heartbeat": None,
            "hold": False,
            "warnings": [],
        }
        pause, resume = f"/api/agents/{agent_id}/pause", f"/api/agents/{agent_id}/resume"
        assert await api.call("POST", pause, token=alice) == (200, expected)
        assert await api.call("POST", pause, token=alice) == (200, expected)  # no-op
        assert (await stored(platform, agent_id))["paused_from"] == before
        assert await api.call("POST", resume, token=alice) == (200, {**expected, "status": before})
        assert await api.call("POST", resume, token=alice) == (200, {**expected, "status": before})
        assert await status_rows(api, alice, agent_id) == [
            (before, f"PAUSED -> {before} (resume by owner)"),
            ("PAUSED", f"{before} -> PAUSED (pause by owner)"),
        ]
        assert (await stored(platform, agent_id))["paused_from"] is None
        assert await api.call("POST", pause, token=ADMIN_TOKEN) == (
            403,
            {"error": "only the agent's owner pauses or resumes it", "code": "forbidden"},
        )


# Errors are JSON.


async def test_bad_requests_get_json_errors(platform: Platform) -> None:
    invalid = "invalid-request"
    async with running(platform) as api:
        alice = await api.owner("alice")
        json_header = {"Content-Type": "application/json"}
        cases: list[tuple[str, str, dict[str, Any], tuple[int, dict[str, str]]]] = [
            (
                "POST",
                "/api/owners",
                {"token": ADMIN_TOKEN, "data": b'{"name": ', "headers": json_header},
                (422, {"error": "Malformed JSON body", "code": invalid}),
            ),
            (
                "POST",
                "/api/agents",
                {"token": alice, "data": b"{'name': 'x'}", "headers": json_header},
                (422, {"error": "Malformed JSON body", "code": invalid}),
            ),
            (
                "POST",
                "/api/owners",
                {"token": ADMIN_TOKEN, "json": {"name": "eve", "admin": True}},
                (422, {"error": "admin: Extra inputs are not permitted", "code": invalid}),
            ),
            (
                "POST",
                "/api/agents",
                {
                    "token": alice,
                    "json": {"name": "a", "role": "SCOUT", "endpoint_url": "x", "key": "mine"},
                },
                (422, {"error": "key: Extra inputs are not permitted", "code": invalid}),
            ),
            (
                "POST",
                "/api/owners",
                {"token": ADMIN_TOKEN, "json": {}},
                (422, {"error": "name: Field required", "code": invalid}),
            ),
            (
                "POST",
                "/api/owners",
                {"token": ADMIN_TOKEN, "json": ["eve"]},
                (
                    422,
                    {
                        "error": "Input should be a valid dictionary or object to extract "
                        "fields from",
                        "code": invalid,
                    },
                ),
            ),
            (
                "GET",
                "/api/no-such-thing",
                {"token": alice},
                (404, {"error": "Not Found", "code": "not-found"}),
            ),
            ("GET", "/no-such-page", {}, (404, {"error": "Not Found", "code": "not-found"})),
            (
                "DELETE",
                "/api/owners",
                {"token": ADMIN_TOKEN},
                (405, {"error": "Method Not Allowed", "code": "method-not-allowed"}),
            ),
            (
                "GET",
                "/api/agents/x/pause",
                {"token": alice},
                (405, {"error": "Method Not Allowed", "code": "method-not-allowed"}),
            ),
            (
                "GET",
                "/api/agents?arena=moon",
                {"token": alice},
                (
                    422,
                    {
                        "error": "query.arena: String should match pattern '^(edgearena|cage)$'",
                        "code": invalid,
                    },
                ),
            ),
        ]
        answers = []
        for method, path, options, _ in cases:
            async with api.session.request(
                method,
                api.base + path,
                json=options.get("json"),
                data=options.get("data"),
                headers={
                    **options.get("headers", {}),
                    **(
                        {"Authorization": f"Bearer {options['token']}"}
                        if "token" in options
                        else {}
                    ),
                },
            ) as response:
                raw = await response.text()
                assert response.content_type == "application/json", (path, raw)
                assert "Traceback" not in raw
                answers.append((response.status, orjson.loads(raw)))
        assert answers == [expected for *_, expected in cases]


async def test_a_crash_is_a_json_500_without_details(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    from palaestra.engine.agents import registry as agents

    async def crash(*_: Any, **__: Any) -> None:
        raise RuntimeError("secret detail of the crash")

    monkeypatch.setattr(agents, "list_agents", crash)
    async with running(platform) as api:
        alice = await api.owner("alice")
        with structlog.testing.capture_logs() as logs:
            async with api.session.get(
                api.base + "/api/agents", headers={"Authorization": f"Bearer {alice}"}
            ) as response:
                raw = await response.text()
                assert (response.status, response.content_type) == (500, "application/json")
    assert orjson.loads(raw) == {"error": "Internal error", "code": "internal"}
    # The details go to the server's log, not to the caller.
    assert [(e["event"], e["log_level"], e["type"]) for e in logs] == [
        ("unhandled error", "error", "RuntimeError")
    ]
    assert "Traceback" not in raw
    assert "secret detail" not in raw


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_a_lost_database_connection_is_a_503_to_try_again(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server drops the pool's connections while they are busy (so not pinged): the
    request that meets one is told to try again, and the next one is served."""
    import asyncpg  # type: ignore[import-untyped]

    # "Busy" however slow the machine: a loaded one takes over a second between the calls.
    monkeypatch.setattr(db, "IDLE_PING_S", 3600.0)
    async with running(platform) as api:
        alice = await api.owner("alice")
        assert (await api.call("GET", "/api/agents", token=alice))[0] == 200
        admin = await asyncpg.connect(platform.db.url.replace("postgresql+asyncpg", "postgresql"))
        try:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        finally:
            await admin.close()
        await asyncio.sleep(0.2)  # the pool's connections see the server's goodbye
        async with api.session.get(
            api.base + "/api/agents", headers={"Authorization": f"Bearer {alice}"}
        ) as response:
            lost = (response.status, response.headers.get("Retry-After"), await response.json())
        assert lost == (
            503,
            "1",
            {"error": "The store is unavailable; try again", "code": "unavailable"},
        )
        assert (await api.call("GET", "/api/agents", token=alice))[0] == 200


async def test_a_body_over_the_cap_is_refused_declared_or_streamed(platform: Platform) -> None:
    cap = platform.settings.max_body_bytes
    too_large = {"error": f"Request body exceeds {cap} bytes", "code": "payload-too-large"}
    sent = 0

    async def stream() -> AsyncIterator[bytes]:
        nonlocal sent
        piece = b'{"name": "' + b"x" * (64 * 1024 - 10)
        yield piece
        sent += len(piece)
        while sent <= cap:
            yield b"x" * (64 * 1024)
            sent += 64 * 1024

    async with running(platform) as api:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"}
        declared = b'{"name": "' + b"x" * cap + b'"}'
        async with api.session.post(
            api.base + "/api/owners", data=io.BytesIO(declared), headers=headers
        ) as response:
            assert response.request_info.headers["Content-Length"] == str(len(declared))
            raw = await response.text()
            assert (response.status, orjson.loads(raw)) == (413, too_large)

        async with api.session.post(
            api.base + "/api/owners", data=stream(), headers=headers
        ) as response:
            assert response.request_info.headers["Transfer-Encoding"] == "chunked"
            assert "Content-Length" not in response.request_info.headers
            raw = await response.text()
            assert (response.status, orjson.loads(raw)) == (413, too_large)
            assert "Traceback" not in raw
        assert sent > cap

        # A body of exactly the cap is read as usual (and then judged on its content).
        exact = b'{"name": "' + b"x" * (cap - 12) + b'"}'
        assert len(exact) == cap
        assert await api.call("POST", "/api/owners", data=exact, headers=headers) == (
            422,
            {"error": "name: String should have at most 200 characters", "code": "invalid-request"},
        )
    async with platform.db.session() as session:
        assert (await session.execute(text("SELECT count(*) FROM owners"))).scalar_one() == 0


# The system routes.


async def test_healthz_answers_with_the_database(platform: Platform) -> None:
    async with running(platform) as api:
        assert await api.call("GET", "/healthz") == (
            200,
            {
                "status": "ok",
                "database": "ok",
                "broker": "in-process",
            },
        )


async def test_metrics_are_prometheus_text_counting_health_pings(platform: Platform) -> None:
    async with running(platform) as api:
        alice = await api.owner("alice")
        async with serve(EdgeAgent(key="")) as endpoint:
            agent_id = (await register(api, alice, endpoint.url("/a")))["agent_id"]
            await set_state(platform, agent_id, status="ACTIVE", next_ping_at=platform.clock.now())
            assert await HealthMonitor(platform).run_once() == 1
        async with api.session.get(api.base + "/metrics") as response:
            assert (response.status, response.content_type) == (200, "text/plain")
            metrics = await response.text()
    lines = metrics.splitlines()
    assert "# TYPE palaestra_health_pings_total counter" in lines
    assert 'palaestra_health_pings_total{outcome="success"} 1.0' in lines
    assert "palaestra_health_pings_in_flight 0.0" in lines


async def test_the_openapi_document_lists_every_route_of_the_contract(platform: Platform) -> None:
    contract = {
        "/api/owners": {"post"},
        "/api/agents": {"get", "post"},
        "/api/agents/{agent_id}": {"get"},
        "/api/agents/{agent_id}/history": {"get"},
        "/api/agents/{agent_id}/wizard": {"post"},
        "/api/agents/{agent_id}/pause": {"post"},
        "/api/agents/{agent_id}/resume": {"post"},
        "/api/agents/{agent_id}/rotate-key": {"post"},
        "/api/agents/{agent_id}/hold": {"post"},
        "/api/agents/{agent_id}/release": {"post"},
        "/api/agents/{agent_id}/verify": {"post"},
        "/api/fighters": {"post"},
        "/api/fighters/endpoint": {"post"},
        "/api/fighters/{fighter_id}": {"get"},
        "/healthz": {"get"},
        "/metrics": {"get"},
    }
    async with running(platform) as api:
        status, document = await api.call("GET", "/openapi.json")
    assert status == 200
    listed = {path: set(methods) for path, methods in document["paths"].items()}
    missing = {
        path: methods - listed.get(path, set())
        for path, methods in contract.items()
        if methods - listed.get(path, set())
    }
    assert missing == {}


async def test_every_operation_is_named_for_what_it_does(platform: Platform) -> None:
    """Each operation has an id a generated client reads well (``get_run``, not
    ``one_api_runs__run_id__get``), a summary and a description."""
    async with running(platform) as api:
        status, document = await api.call("GET", "/openapi.json")
    assert status == 200
    operations = [
        (method, path, operation)
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    ]
    ids = [operation["operationId"] for _, _, operation in operations]
    assert len(ids) == len(set(ids))
    badly_named = [i for i in ids if not re.fullmatch(r"[a-z]+(_[a-z]+)+", i) or "api" in i]
    assert badly_named == []
    undescribed = [
        f"{method} {path}"
        for method, path, operation in operations
        if not operation.get("summary") or not operation.get("description")
    ]
    assert undescribed == []
    named = {(method, path): operation["operationId"] for method, path, operation in operations}
    assert named[("get", "/api/runs/{run_id}")] == "get_run"
    assert named[("get", "/api/runs")] == "list_runs"
    assert named[("post", "/api/runs")] == "start_run"
    assert named[("post", "/api/agent-tasks/{task_id}/complete")] == "complete_task"
