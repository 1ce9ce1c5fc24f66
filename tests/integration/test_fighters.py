"""cage.v1 fighters through the real API, on both stores: creation, the public profile, and
the seed's endpoint registration against harnesses on 127.0.0.1."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest
from aiohttp import web
from cryptography.fernet import Fernet
from sqlalchemy import text

from palaestra.platform import Platform
from tests.integration.conftest import NetworkGuard
from tests.integration.platform_fixtures import ADMIN_TOKEN, Api, running
from tests.integration.servers import Endpoint, Handler, json_reply, reply, serve

pytestmark = pytest.mark.asyncio

CLASSES = ["rogue", "corporate", "academic", "independent"]
MODEL = {"base_url": "https://llm.example/v1/", "model": "tiny-1", "api_key": "sk-provider-secret"}
MISSING_ID = "01900000-0000-7000-8000-000000000000"
NONCE = re.compile(r"[0-9a-f]{32}")
USED = {"error": "Invalid or already used claim code", "code": "forbidden"}


def invalid(message: str) -> dict[str, str]:
    return {"error": message, "code": "invalid-request"}


async def create(
    api: Api,
    token: str,
    entrant_type: str = "harness",
    fighter_class: str = "rogue",
    *,
    model: dict[str, str] | None = None,
    name: str = "fighter",
) -> dict[str, Any]:
    more = {} if model is None else {"model": model}
    status, body = await api.call(
        "POST",
        "/api/fighters",
        token=token,
        json={"name": name, "entrant_type": entrant_type, "class": fighter_class, **more},
    )
    assert status == 201, body
    return body  # type: ignore[no-any-return]


async def stored(platform: Platform, fighter_id: str) -> dict[str, Any]:
    """The fighter's row as the database holds it, read with plain SQL."""
    async with platform.db.session() as session:
        row = (
            await session.execute(text("SELECT * FROM agents WHERE id = :id"), {"id": fighter_id})
        ).one()
    return dict(row._mapping)


def as_json(value: Any) -> Any:
    """A JSON column read with plain SQL: text on SQLite, already decoded on PostgreSQL."""
    return orjson.loads(value) if isinstance(value, str) else value


def echo_nonce(request_body: bytes) -> bytes:
    return orjson.dumps({"nonce": orjson.loads(request_body)["nonce"]})


async def echo(request: web.BaseRequest) -> web.StreamResponse:
    """A harness that proves control of its URL, as the seed's minimal harness does."""
    return web.Response(body=echo_nonce(await request.read()), content_type="application/json")


def challenges(endpoint: Endpoint) -> list[str]:
    """The nonces the harness was sent; fails on anything that is not exactly a challenge."""
    nonces = []
    for received in endpoint.received:
        assert (received.method, received.headers["Content-Type"]) == ("POST", "application/json")
        body = orjson.loads(received.body)
        assert set(body) == {"type", "nonce"}
        assert body["type"] == "challenge"
        assert NONCE.fullmatch(body["nonce"]), body["nonce"]
        nonces.append(body["nonce"])
    return nonces


def claim(created: dict[str, Any], url: str, **more: Any) -> dict[str, Any]:
    return {
        "fighter_id": created["fighter_id"],
        "claim_code": created["claim_code"],
        "url": url,
        "harness_name": "retrieval + guard model",
        "sandbox_attested": True,
        **more,
    }


#: OpenSkill's defaults before a fighter's first scored match.
UNRATED = {
    "mu": 25.0,
    "sigma": 25.0 / 3,
    "conservative": 25.0 - 3 * (25.0 / 3),
    "matches": 0,
    "wins": 0,
    "draws": 0,
    "losses": 0,
}


def profile(created: dict[str, Any], entrant_type: str = "harness", **more: Any) -> dict[str, Any]:
    return {
        "fighter_id": created["fighter_id"],
        "name": "fighter",
        "entrant_type": entrant_type,
        "class": "rogue",
        "status": "PENDING" if entrant_type == "harness" else "ACTIVE",
        "harness_name": None,
        "sandbox_attested": False,
        "has_endpoint": False,
        "rated_challenges": False,
        # Other owners' friendlies: taken unless the turns spend the owner's provider key.
        "friendly_challenges": entrant_type != "model",
        "attack": UNRATED,
        "defence": UNRATED,
        **more,
    }


# Creation and the public profile.


@pytest.mark.parametrize("entrant_type", ["harness", "model", "house"])
async def test_a_fighter_of_each_entrant_type_gets_a_claim_code_and_a_public_profile(
    platform: Platform, entrant_type: str
) -> None:
    model = MODEL if entrant_type == "model" else None
    async with running(platform) as api:
        alice = await api.owner("alice")
        created = await create(api, alice, entrant_type, model=model)
        assert set(created) == {"fighter_id", "claim_code"}
        assert created["claim_code"].startswith("claim_")

        async with api.session.get(api.base + f"/api/fighters/{created['fighter_id']}") as answer:
            raw = await answer.text()
            assert answer.status == 200, raw
    assert orjson.loads(raw) == profile(created, entrant_type)
    assert created["claim_code"] not in raw
    assert MODEL["api_key"] not in raw

    row = await stored(platform, created["fighter_id"])
    assert created["claim_code"] not in repr(row)
    assert MODEL["api_key"] not in repr(row)
    if entrant_type == "model":
        assert as_json(row["provider"]) == {
            "base_url": "https://llm.example/v1",
            "model": "tiny-1",
        }
        secret = platform.settings.secret_key
        assert secret is not None
        fernet = Fernet(secret.get_secret_value().encode())
        assert fernet.decrypt(row["provider_key_sealed"].encode()).decode() == MODEL["api_key"]
    else:
        assert (as_json(row["provider"]), row["provider_key_sealed"]) == (None, None)


async def test_every_configured_class_is_accepted_and_only_those(platform: Platform) -> None:
    async with running(platform) as api:
        alice = await api.owner("alice")
        for fighter_class in CLASSES:
            created = await create(api, alice, "house", fighter_class, name=fighter_class)
            _, seen = await api.call("GET", f"/api/fighters/{created['fighter_id']}")
            assert seen["class"] == fighter_class

        platform.settings.fighter_classes = ["lab"]
        created = await create(api, alice, "house", "lab", name="lab")
        _, seen = await api.call("GET", f"/api/fighters/{created['fighter_id']}")
        assert seen["class"] == "lab"
        assert await api.call(
            "POST",
            "/api/fighters",
            token=alice,
            json={"name": "f", "entrant_type": "house", "class": "rogue"},
        ) == (400, invalid("class must be one of lab"))


MODEL_RULE = (
    "model (base_url, model, api_key; or model local alone) is required for, and only for, "
    "entrant type model"
)
REMOTE_RULE = "model.base_url and model.api_key are required for a remote model"


#: Creation requests that must be refused, with the exact answer.
REFUSED: list[tuple[dict[str, Any], tuple[int, dict[str, str]]]] = [
    (
        {"entrant_type": "harness", "class": "pirate"},
        (400, invalid("class must be one of rogue, corporate, academic, independent")),
    ),
    (
        {"entrant_type": "harness", "class": "Rogue"},
        (400, invalid("class must be one of rogue, corporate, academic, independent")),
    ),
    ({"entrant_type": "harness"}, (422, invalid("class: Field required"))),
    (
        {"entrant_type": "cyborg", "class": "rogue"},
        (400, invalid("entrant_type must be one of harness, model, house")),
    ),
    ({"entrant_type": "model", "class": "rogue"}, (400, invalid(MODEL_RULE))),
    ({"entrant_type": "harness", "class": "rogue", "model": MODEL}, (400, invalid(MODEL_RULE))),
    ({"entrant_type": "house", "class": "rogue", "model": MODEL}, (400, invalid(MODEL_RULE))),
    (
        {"entrant_type": "model", "class": "rogue", "model": {**MODEL, "api_key": ""}},
        (422, invalid("model.api_key: String should have at least 1 character")),
    ),
    (
        {
            "entrant_type": "model",
            "class": "rogue",
            "model": {"base_url": "https://llm.example", "model": "m"},
        },
        (400, invalid(REMOTE_RULE)),
    ),
    (
        {"entrant_type": "model", "class": "rogue", "model": {"model": "m", "api_key": "k"}},
        (400, invalid(REMOTE_RULE)),
    ),
    (
        {"entrant_type": "model", "class": "rogue", "model": {**MODEL, "model": "local"}},
        (400, invalid("model local runs in the arena: give no base_url or api_key")),
    ),
    (
        {"entrant_type": "model", "class": "rogue", "model": {**MODEL, "base_url": "ftp://x"}},
        (
            400,
            invalid(
                "model.base_url is refused by the egress policy: "
                "scheme 'ftp' is not allowed, only https"
            ),
        ),
    ),
    (
        {
            "entrant_type": "model",
            "class": "rogue",
            "model": {**MODEL, "base_url": "https://169.254.169.254/v1"},
        },
        (
            400,
            invalid(
                "model.base_url is refused by the egress policy: "
                "169.254.169.254 is a link-local address"
            ),
        ),
    ),
    (
        {"entrant_type": "model", "class": "rogue", "model": {**MODEL, "model": "  "}},
        (400, invalid("model.model must not be empty")),
    ),
    (
        {"entrant_type": "house", "class": "rogue", "claim_code": "mine"},
        (422, invalid("claim_code: Extra inputs are not permitted")),
    ),
]


async def test_fighter_creation_is_validated(platform: Platform) -> None:
    async with running(platform) as api:
        alice = await api.owner("alice")
        answers = [
            await api.call("POST", "/api/fighters", token=alice, json={"name": "f", **body})
            for body, _ in REFUSED
        ]
        assert answers == [answer for _, answer in REFUSED]
        assert await api.call("GET", "/api/agents?arena=cage", token=alice) == (200, [])


async def test_fighters_are_created_by_owners_and_profiles_are_of_fighters_only(
    platform: Platform,
) -> None:
    body = {"name": "f", "entrant_type": "house", "class": "rogue"}
    async with running(platform) as api:
        assert await api.call("POST", "/api/fighters", json=body) == (
            401,
            {"error": "Missing bearer token", "code": "unauthorized"},
        )
        assert await api.call("POST", "/api/fighters", token=ADMIN_TOKEN, json=body) == (
            403,
            {"error": "fighters are created by an owner", "code": "forbidden"},
        )
        assert await api.call("GET", f"/api/fighters/{MISSING_ID}") == (
            404,
            {"error": f"Fighter {MISSING_ID} not found", "code": "not-found"},
        )
        alice = await api.owner("alice")
        async with serve(json_reply({"ok": True})) as endpoint:
            status, agent = await api.call(
                "POST",
                "/api/agents",
                token=alice,
                json={"name": "scout", "role": "SCOUT", "endpoint_url": endpoint.url("/")},
            )
        assert status == 201, agent
        assert await api.call("GET", f"/api/fighters/{agent['agent_id']}") == (
            404,
            {"error": f"Fighter {agent['agent_id']} not found", "code": "not-found"},
        )


# The seed's endpoint registration.


async def test_a_harness_that_echoes_the_nonce_is_registered(platform: Platform) -> None:
    async with running(platform) as api:
        alice = await api.owner("alice")
        created = await create(api, alice)
        async with serve(echo) as harness:
            url = harness.url("/fight")
            status, body = await api.call(
                "POST", "/api/fighters/endpoint", json=claim(created, url)
            )
            assert status == 200, body
            registered = profile(
                created,
                status="ACTIVE",
                harness_name="retrieval + guard model",
                sandbox_attested=True,
                has_endpoint=True,
            )
            assert body == registered
            assert len(challenges(harness)) == 1
            assert [r.path for r in harness.received] == ["/fight"]
            assert harness.received[0].headers["User-Agent"] == "Palaestra-Cage/1.0"

            # The claim code was for one use.
            assert await api.call("POST", "/api/fighters/endpoint", json=claim(created, url)) == (
                403,
                USED,
            )
            assert len(harness.received) == 1

        assert await api.call("GET", f"/api/fighters/{created['fighter_id']}") == (200, registered)
    row = await stored(platform, created["fighter_id"])
    assert (row["endpoint_url"], row["claim_code_hash"]) == (url, None)


async def test_the_nonce_is_fresh_for_every_attempt(platform: Platform) -> None:
    replies = [orjson.dumps({"nonce": "0" * 32})]

    async def wrong_then_echo(request: web.BaseRequest) -> web.StreamResponse:
        raw = replies.pop(0) if replies else echo_nonce(await request.read())
        return web.Response(body=raw, content_type="application/json")

    async with running(platform) as api:
        alice = await api.owner("alice")
        first, second = await create(api, alice), await create(api, alice, name="second")
        async with serve(wrong_then_echo) as harness:
            url = harness.url("/fight")
            status, _ = await api.call("POST", "/api/fighters/endpoint", json=claim(first, url))
            assert status == 400
            status, _ = await api.call("POST", "/api/fighters/endpoint", json=claim(first, url))
            assert status == 200
            status, _ = await api.call("POST", "/api/fighters/endpoint", json=claim(second, url))
            assert status == 200
        nonces = challenges(harness)
    assert len(nonces) == 3
    assert len(set(nonces)) == 3


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        (
            json_reply({"nonce": "0123456789abcdef0123456789abcdef"}),
            "Challenge failed: the reply did not echo the nonce",
        ),
        (json_reply({}), "Validation failed: Missing nonce"),
        (json_reply({"message": "hello"}), "Validation failed: Missing nonce"),
        (json_reply(["nonce"]), "Validation failed: body: expected an object, got array"),
        (json_reply("nonce"), "Validation failed: body: expected an object, got string"),
        (reply("boom", status=500), "External agent responded with 500: boom"),
        (reply("<html>hi</html>"), "Unexpected token '<' in JSON at position 0"),
    ],
    ids=["wrong-nonce", "empty-object", "no-nonce", "array", "string", "500", "not-json"],
)
async def test_a_harness_that_fails_the_challenge_stays_pending(
    platform: Platform, script: Handler, reason: str
) -> None:
    async with running(platform) as api:
        alice = await api.owner("alice")
        created = await create(api, alice)
        async with serve(script) as harness:
            body = claim(created, harness.url("/fight"))
            assert await api.call("POST", "/api/fighters/endpoint", json=body) == (
                400,
                invalid(reason),
            )
        assert len(challenges(harness)) == 1  # the challenge, and nothing else
        assert await api.call("GET", f"/api/fighters/{created['fighter_id']}") == (
            200,
            profile(created),
        )
        row = await stored(platform, created["fighter_id"])
        assert (row["status"], row["endpoint_url"]) == ("PENDING", None)

        # A failed challenge does not use up the claim code.
        async with serve(echo) as harness:
            status, registered = await api.call(
                "POST", "/api/fighters/endpoint", json=claim(created, harness.url("/fight"))
            )
        assert (status, registered["status"]) == (200, "ACTIVE")


async def test_a_wrong_claim_code_sends_nothing(platform: Platform) -> None:
    async with running(platform) as api:
        alice = await api.owner("alice")
        created = await create(api, alice)
        other = await create(api, alice, name="other")
        async with serve(echo) as harness:
            url = harness.url("/fight")
            wrong = [
                claim(created, url, claim_code="claim_guessed"),
                claim(created, url, claim_code=""),
                claim(created, url, claim_code=other["claim_code"]),
            ]
            for body in wrong:
                assert await api.call("POST", "/api/fighters/endpoint", json=body) == (403, USED)
            assert await api.call(
                "POST", "/api/fighters/endpoint", json=claim(created, url, fighter_id=MISSING_ID)
            ) == (404, {"error": f"Fighter {MISSING_ID} not found", "code": "not-found"})
        assert harness.received == []
        assert (await stored(platform, created["fighter_id"]))["status"] == "PENDING"


@pytest.mark.parametrize("entrant_type", ["model", "house"])
async def test_only_a_harness_registers_an_endpoint(platform: Platform, entrant_type: str) -> None:
    model = MODEL if entrant_type == "model" else None
    async with running(platform) as api:
        alice = await api.owner("alice")
        created = await create(api, alice, entrant_type, model=model)
        async with serve(echo) as harness:
            body = claim(created, harness.url("/fight"))
            assert await api.call("POST", "/api/fighters/endpoint", json=body) == (
                400,
                invalid("only harness fighters register an endpoint"),
            )
        assert harness.received == []


async def test_an_endpoint_the_egress_policy_refuses_is_never_contacted(
    platform: Platform, network: NetworkGuard
) -> None:
    async with running(platform) as api:
        alice = await api.owner("alice")
        created = await create(api, alice)
        connects = len(network.connects)
        for url, why in [
            ("https://10.0.0.1/", "10.0.0.1 is a private address"),
            ("https://192.168.1.20/fight", "192.168.1.20 is a private address"),
            ("https://169.254.169.254/latest", "169.254.169.254 is a link-local address"),
        ]:
            assert await api.call("POST", "/api/fighters/endpoint", json=claim(created, url)) == (
                400,
                invalid(f"Endpoint refused by egress policy: {why}"),
            )
        # Only the test's own calls to the API, on loopback, left this process.
        assert all(host == "127.0.0.1" for host, _ in network.connects[connects:])
        assert await api.call("GET", f"/api/fighters/{created['fighter_id']}") == (
            200,
            profile(created),
        )
