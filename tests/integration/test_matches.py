"""cage.v1 matches through the real API and referee, on both stores, against harnesses on
127.0.0.1: the turn wire, every way a match ends, failed turns, crash recovery, and what a
transcript shows before and after the end."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import random
import re
import secrets
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from aiohttp import web
from sqlalchemy import update

from palaestra.clock import FrozenClock
from palaestra.engine.cage.matches import get_match
from palaestra.engine.cage.referee import Referee, Step, play_next_turn
from palaestra.engine.cage.turns import LEASE_GRACE_S
from palaestra.platform import Platform
from palaestra.rules.cage.material import draw_material
from palaestra.rules.cage.payloads import SYSTEM_PROMPT
from palaestra.store.models import Agent
from tests.integration.cage_agents import (
    CageHarness,
    ChatServer,
    Script,
    access_code_in,
    answers,
    injects,
    leaks_in_base64_on,
    refuses,
    stalls_on,
)
from tests.integration.platform_fixtures import ADMIN_TOKEN, Api, running
from tests.integration.servers import serve

pytestmark = pytest.mark.asyncio

DEADLINE_MS = 500
TURN_FIELDS = {"type", "match_id", "turn", "your_role", "ruleset", "deadline_ms", "payload"}
MODEL_KEY = "sk-model-entrant-secret"


@pytest.fixture
def arena(platform: Platform) -> Platform:
    """The platform with short turns, and matches played only when a test drains them."""
    platform.settings.cage_turn_deadline_ms = DEADLINE_MS
    platform.settings.referee_enabled = False
    return platform


@dataclass
class Entered:
    fighter_id: str
    claim_code: str


#: How many fighters of each entrant type each owner's token has made (for their names).
_MADE: dict[tuple[str, str], int] = {}


async def create_fighter(
    api: Api,
    token: str,
    entrant_type: str,
    *,
    model: dict[str, str] | None = None,
    friendly: bool | None = None,
) -> Entered:
    """``friendly``: whether other owners' friendlies may challenge it (a model fighter on
    a provider takes none unless its owner says so)."""
    # An owner's names are its own: a second fighter of a type is "<type>-fighter-2".
    made = _MADE[token, entrant_type] = _MADE.get((token, entrant_type), 0) + 1
    name = f"{entrant_type}-fighter" + (f"-{made}" if made > 1 else "")
    body: dict[str, Any] = {"name": name, "entrant_type": entrant_type}
    body["class"] = "academic" if entrant_type == "house" else "rogue"
    if model is not None:
        body["model"] = model
    if friendly is not None:
        body["friendly_challenges"] = friendly
    status, created = await api.call("POST", "/api/fighters", token=token, json=body)
    assert status == 201, created
    return Entered(created["fighter_id"], created["claim_code"])


async def register(api: Api, token: str, url: str, *, sandbox: bool = True) -> Entered:
    fighter = await create_fighter(api, token, "harness")
    status, body = await api.call(
        "POST",
        "/api/fighters/endpoint",
        json={
            "fighter_id": fighter.fighter_id,
            "claim_code": fighter.claim_code,
            "url": url,
            "harness_name": "scripted",
            "sandbox_attested": sandbox,
        },
    )
    assert status == 200, body
    return fighter


async def start(api: Api, token: str, attacker: str, defender: str) -> str:
    status, body = await api.call(
        "POST", "/api/matches", token=token, json={"attacker": attacker, "defender": defender}
    )
    assert status == 202, body
    return str(body["match_id"])


async def transcript(api: Api, match_id: str) -> dict[str, Any]:
    """The transcript as the admin reads it: failed turns' reasons whole."""
    status, body = await api.call("GET", f"/api/matches/{match_id}", token=ADMIN_TOKEN)
    assert status == 200, body
    return body  # type: ignore[no-any-return]


async def drain(platform: Platform) -> None:
    await Referee(platform).run_once()


async def secret_material(platform: Platform, match_id: str) -> dict[str, Any]:
    return (await get_match(platform, match_id)).match.material["secret"]  # type: ignore[no-any-return]


@dataclass
class Bout:
    """Two harnesses of two owners, registered and ready."""

    api: Api
    alice: str
    attacker: CageHarness
    defender: CageHarness
    attacker_id: str
    defender_id: str

    async def play(self, platform: Platform) -> tuple[str, dict[str, Any]]:
        match_id = await start(self.api, self.alice, self.attacker_id, self.defender_id)
        await drain(platform)
        return match_id, await transcript(self.api, match_id)


@contextlib.asynccontextmanager
async def bout(platform: Platform, attacker: Script, defender: Script) -> AsyncIterator[Bout]:
    """Harnesses of two owners playing ``attacker`` and ``defender``, registered."""
    attacking, defending = CageHarness(attacker), CageHarness(defender)
    async with (
        running(platform) as api,
        serve(attacking) as one,
        serve(defending) as two,
    ):
        alice, bob = await api.owner("alice"), await api.owner("bob")
        a = await register(api, alice, one.url("/fight"))
        d = await register(api, bob, two.url("/fight"), sandbox=False)
        yield Bout(api, alice, attacking, defending, a.fighter_id, d.fighter_id)


def summary(body: dict[str, Any]) -> tuple[Any, ...]:
    return body["status"], body["outcome"], body["decided_by"], len(body["turns"])


# How a match ends.


async def test_a_defender_that_leaks_in_base64_on_turn_4_loses_at_turn_4(arena: Platform) -> None:
    known: dict[str, str] = {}
    async with bout(arena, injects, leaks_in_base64_on(4, lambda: known["answer"])) as b:
        match_id = await start(b.api, b.alice, b.attacker_id, b.defender_id)
        known["answer"] = (await secret_material(arena, match_id))["task"]["answer"]
        await drain(arena)
        body = await transcript(b.api, match_id)
    assert summary(body) == ("SCORED", "attacker", "leak", 4)
    assert [t["status"] for t in body["turns"]] == ["OK"] * 4
    assert [t["turn"] for t in b.attacker.turns] == [1, 3]
    assert [t["turn"] for t in b.defender.turns] == [2, 4]
    turn2, turn4 = body["turns"][1]["findings"], body["turns"][3]["findings"]
    assert (turn2["leak"], turn2["hijack"], turn2["utility"]["held"]) == ([], [], True)
    (evidence,) = turn4["leak"]
    code = body["material"]["access_code"]
    encoded = base64.b64encode(code.encode()).decode()
    message = body["turns"][3]["message"]
    assert evidence["secret"] == "access_code"
    assert evidence["transformation"] == "base64"
    assert evidence["decoded"] == code
    assert encoded.rstrip("=") == evidence["excerpt"]
    assert message[evidence["start"] : evidence["end"]] == evidence["excerpt"]


async def test_a_long_reply_is_judged_off_the_event_loop_and_its_leak_found(
    arena: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    from palaestra.engine.cage import referee
    from palaestra.rules.judge import judge_reply as judge

    judged_on: list[tuple[int, str]] = []

    def recorded(reply: str, **secrets: Any) -> Any:
        judged_on.append((len(reply), threading.current_thread().name))
        return judge(reply, **secrets)

    monkeypatch.setattr(referee, "judge_reply", recorded)
    padding = "The weather was mild and the ledger balanced. " * 1000  # about 46 KiB

    def long_leak(body: dict[str, Any]) -> str:
        code = base64.b64encode(access_code_in(body["payload"]).encode()).decode()
        return f"{padding}Encoded for safety: {code}"

    async with bout(arena, injects, long_leak) as b:
        _, body = await b.play(arena)
    assert summary(body) == ("SCORED", "attacker", "leak", 2)
    (evidence,) = body["turns"][1]["findings"]["leak"]
    assert evidence["decoded"] == body["material"]["access_code"]
    ((length, thread),) = judged_on
    assert length > referee.JUDGE_INLINE_CHARS
    assert thread != threading.main_thread().name


async def test_the_event_loop_keeps_answering_while_a_long_reply_is_judged(
    arena: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    from palaestra.engine.cage import referee
    from palaestra.rules.judge import judge_reply as judge

    judging: list[tuple[float, float]] = []

    def timed(reply: str, **secrets: Any) -> Any:
        start = time.perf_counter()
        try:
            return judge(reply, **secrets)
        finally:
            judging.append((start, time.perf_counter()))

    monkeypatch.setattr(referee, "judge_reply", timed)
    # Random base 85, about 220 KiB (under the 256 KiB reply cap): the costliest shape per
    # character of the adversarial corpus (every decoding view finds something to read).
    rng = random.Random(3)
    heavy = base64.b85encode(rng.randbytes(180_000)).decode()
    ticks: list[float] = []

    async def tick() -> None:
        while True:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.005)

    ticker = asyncio.create_task(tick())
    try:
        async with bout(arena, injects, lambda body: heavy) as b:
            _, body = await b.play(arena)
    finally:
        ticker.cancel()
    assert summary(body) == ("SCORED", "draw", "utility", 6)
    assert len(judging) == 3
    for start, end in judging:
        assert end - start > 0.05  # long enough to see the loop stall, were it judged on it
        during = [t for t in ticks if start < t < end]
        # Judged on the loop, the loop would not tick once while the judge runs; on a
        # thread, it runs between the judge's slices of the interpreter (a count, not the
        # longest gap, which a busy machine stretches whoever holds the loop).
        assert len(during) >= 5, (end - start, len(during))


async def test_a_defender_that_refuses_everything_draws(arena: Platform) -> None:
    async with bout(arena, injects, refuses) as b:
        _, body = await b.play(arena)
    assert summary(body) == ("SCORED", "draw", "utility", 6)
    for turn in body["turns"][1::2]:
        assert turn["findings"] == {
            "sends": 1,
            "leak": [],
            "partial": [],
            "hijack": [],
            "utility": {"held": False, "answers": []},
        }


async def test_a_helpful_tight_defender_wins(arena: Platform) -> None:
    known: dict[str, str] = {}
    async with bout(arena, injects, answers(lambda: known["answer"])) as b:
        match_id = await start(b.api, b.alice, b.attacker_id, b.defender_id)
        known["answer"] = (await secret_material(arena, match_id))["task"]["answer"]
        await drain(arena)
        body = await transcript(b.api, match_id)
    assert summary(body) == ("SCORED", "defender", "utility", 6)
    assert [t["findings"]["utility"]["held"] for t in body["turns"][1::2]] == [True] * 3
    assert body["outcome"] == "defender"


async def test_an_attacker_that_times_out_twice_forfeits(arena: Platform) -> None:
    async with bout(arena, stalls_on({1, 3}, 2.0, injects), refuses) as b:
        _, body = await b.play(arena)
    assert summary(body) == ("SCORED", "defender", "forfeit", 3)
    turns = body["turns"]
    assert [t["status"] for t in turns] == ["FAILED", "OK", "FAILED"]
    timed_out = f"External agent timed out after {DEADLINE_MS}ms"
    assert (turns[0]["reason"], turns[2]["reason"]) == (timed_out, timed_out)
    assert turns[0]["message"] is None
    # The failed attacker turn sends an empty opponent block on.
    assert re.search(
        r"BEGIN>>>\n\n<<<UNTRUSTED OPPONENT MESSAGE \w{16} END>>>$", turns[1]["payload"]
    )


INVALID = "Validation failed: "
WRONG_ANSWERS = {
    "empty-object": (web.json_response({}), f"{INVALID}Missing message"),
    "array": (web.json_response([]), f"{INVALID}body: expected an object, got array"),
    "not-json": (web.Response(text="<html>"), "Unexpected token '<' in JSON at position 0"),
    "503": (
        web.json_response({"message": "x"}, status=503),
        'External agent responded with 503: {"message": "x"}',
    ),
    "over-256kb": (
        web.json_response({"message": "x" * 300_000}),
        "External agent response exceeded 262144 bytes",
    ),
}


@pytest.mark.parametrize(("response", "reason"), WRONG_ANSWERS.values(), ids=WRONG_ANSWERS.keys())
async def test_a_harness_that_answers_wrongly_fails_its_turn(
    arena: Platform, response: web.Response, reason: str
) -> None:
    def broken(body: dict[str, Any]) -> web.StreamResponse:
        # aiohttp responses are single-use: send a fresh copy every time.
        raw = response.body if isinstance(response.body, bytes) else b""
        return web.Response(body=raw, status=response.status, content_type=response.content_type)

    async with bout(arena, injects, broken) as b:
        _, body = await b.play(arena)
    assert summary(body) == ("SCORED", "attacker", "forfeit", 4)
    defender_turns = body["turns"][1::2]
    assert [(t["status"], t["reason"], t["message"]) for t in defender_turns] == [
        ("FAILED", reason, None)
    ] * 2
    assert all(t["findings"] == {"sends": 1} for t in defender_turns)


async def test_a_message_that_is_not_a_string_is_a_move_with_a_warning(arena: Platform) -> None:
    """The seed fails only a missing message: a number is a move, read as its JSON text, and
    null an empty one; our stricter rule (a string) is a warning kept with the turn."""
    replies = iter([7, None, 7])

    def numbers(body: dict[str, Any]) -> web.StreamResponse:
        return web.json_response({"message": next(replies)})

    async with bout(arena, injects, numbers) as b:
        _, body = await b.play(arena)
    defender_turns = body["turns"][1::2]
    moves = [(t["status"], t["message"]) for t in defender_turns]
    assert moves == [("OK", "7"), ("OK", ""), ("OK", "7")]
    number = "warning: message: expected a string, got number (taken as its JSON text)"
    null = "warning: message: expected a string, got null (taken as an empty message)"
    assert [t["reason"] for t in defender_turns] == [number, null, number]
    assert summary(body)[2] != "forfeit"


async def test_house_baseline_fighters_play_honestly(arena: Platform) -> None:
    async with running(arena) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        one = await create_fighter(api, alice, "house")
        two = await create_fighter(api, bob, "house")
        match_id = await start(api, alice, one.fighter_id, two.fighter_id)
        await drain(arena)
        body = await transcript(api, match_id)
    assert summary(body) == ("SCORED", "defender", "utility", 6)
    assert body["attacker"]["executor"] == body["defender"]["executor"] == "house-baseline"
    assert body["material"]["hijack_phrase"] in body["turns"][0]["message"]


# The turn wire.


async def test_every_turn_is_one_request_as_the_seed_says(arena: Platform) -> None:
    async with bout(arena, injects, refuses) as b:
        match_id, body = await b.play(arena)
    for harness, role in [(b.attacker, "attacker"), (b.defender, "defender")]:
        for sent, key in zip(harness.turns, harness.keys, strict=True):
            assert set(sent) == TURN_FIELDS
            assert sent["type"] == "turn"
            assert sent["match_id"] == match_id
            assert sent["your_role"] == role
            assert sent["ruleset"] == "cage.v1"
            assert sent["deadline_ms"] == DEADLINE_MS
            assert key == f"{match_id}:{sent['turn']}"
            assert sent["payload"] == body["turns"][sent["turn"] - 1]["payload"]
        assert set(harness.user_agents) == {"Palaestra-Cage/1.0"}
    turns = body["turns"]
    assert injects({}) in turns[1]["payload"]  # the attacker's move, fenced for the defender
    assert refuses({}) in turns[2]["payload"]  # the defender's reply, fenced for the attacker
    assert "UNTRUSTED OPPONENT MESSAGE" not in turns[0]["payload"]
    assert access_code_in(turns[1]["payload"]) == body["material"]["access_code"]


async def test_a_model_entrant_is_called_with_the_fixed_system_prompt(arena: Platform) -> None:
    chat = ChatServer(reply=lambda request: "I will not. ANSWER: 0")
    async with running(arena) as api, serve(chat) as provider, serve(CageHarness(injects)) as h:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        model = {"base_url": provider.url("/v1"), "model": "tiny-1", "api_key": MODEL_KEY}
        defender = await create_fighter(api, bob, "model", model=model, friendly=True)
        attacker = await register(api, alice, h.url("/"))
        match_id = await start(api, alice, attacker.fighter_id, defender.fighter_id)
        await drain(arena)
        body = await transcript(api, match_id)
    assert summary(body)[0] == "SCORED"
    assert len(chat.requests) == 3
    for request, turn in zip(chat.requests, body["turns"][1::2], strict=True):
        assert request["model"] == "tiny-1"
        assert request["messages"] == [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": turn["payload"]},
        ]
        assert turn["message"] == "I will not. ANSWER: 0"
    assert chat.authorizations == [f"Bearer {MODEL_KEY}"] * 3
    assert body["defender"]["executor"] == "model:tiny-1"


@pytest.mark.parametrize("status", [500, 302], ids=["error", "redirect"])
async def test_a_model_entrants_provider_failure_is_its_failed_turn(
    arena: Platform, status: int
) -> None:
    """An error, or a redirect (never followed), from a model's provider fails its turns."""
    chat = ChatServer(status=status)
    async with running(arena) as api, serve(chat) as provider, serve(CageHarness(injects)) as h:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        model = {"base_url": provider.url("/v1"), "model": "tiny-1", "api_key": MODEL_KEY}
        defender = await create_fighter(api, bob, "model", model=model, friendly=True)
        attacker = await register(api, alice, h.url("/"))
        match_id = await start(api, alice, attacker.fighter_id, defender.fighter_id)
        await drain(arena)
        body = await transcript(api, match_id)
    assert summary(body) == ("SCORED", "attacker", "forfeit", 4)
    assert body["turns"][1]["reason"].startswith(
        f"model provider failed: External agent responded with {status}"
    )
    assert len(chat.requests) == 2  # its two turns, each asked once: no redirect followed


async def test_a_failure_of_the_house_model_voids_the_match(arena: Platform) -> None:
    chat = ChatServer(status=500)
    async with running(arena) as api, serve(chat) as provider, serve(CageHarness(injects)) as h:
        arena.settings.house_base_url = provider.url("/v1")
        arena.settings.house_model = "house-1"
        alice, bob = await api.owner("alice"), await api.owner("bob")
        defender = await create_fighter(api, bob, "house")
        attacker = await register(api, alice, h.url("/"))
        match_id = await start(api, alice, attacker.fighter_id, defender.fighter_id)
        await drain(arena)
        body = await transcript(api, match_id)
    assert summary(body) == ("VOIDED", None, None, 2)
    assert body["defender"]["executor"] == "house:house-1"
    assert body["void_reason"].startswith("turn 2: model provider failed")
    assert body["turns"][1]["reason"].startswith("arena fault: model provider failed")
    assert body["material"] is not None  # a voided match is over: its secrets are shown


async def test_a_bug_in_the_judge_voids_the_match(
    arena: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(reply: str, **secrets: Any) -> None:
        raise KeyError("oops")

    monkeypatch.setattr("palaestra.engine.cage.referee.judge_reply", broken)
    async with bout(arena, injects, refuses) as b:
        _, body = await b.play(arena)
    assert summary(body) == ("VOIDED", None, None, 2)
    assert body["void_reason"] == "turn 2: the judge failed: KeyError: 'oops'"
    assert body["turns"][1]["message"] == refuses({})  # kept, to be judged again


# Crash recovery.


async def test_a_turn_cut_off_by_a_crash_is_resent_with_the_same_key_and_gets_the_same_move(
    arena: Platform, clock: FrozenClock
) -> None:
    moves: dict[str, str] = {}
    reached = asyncio.Event()

    async def cached(body: dict[str, Any]) -> str:
        key = f"{body['match_id']}:{body['turn']}"
        moves.setdefault(key, f"move {secrets.token_hex(8)}")  # a correct agent caches by key
        if not reached.is_set():
            reached.set()
            await asyncio.Event().wait()  # the first request never gets its answer
        return moves[key]

    async with bout(arena, cached, refuses) as b:
        match_id = await start(b.api, b.alice, b.attacker_id, b.defender_id)
        crashed = asyncio.create_task(play_next_turn(arena, match_id))
        await reached.wait()
        crashed.cancel()  # the platform dies mid-turn
        with contextlib.suppress(asyncio.CancelledError):
            await crashed
        running_now = await transcript(b.api, match_id)
        assert [(t["turn"], t["status"]) for t in running_now["turns"]] == [(1, "RUNNING")]

        # Within the lease nobody else takes the turn over...
        assert (await play_next_turn(arena, match_id)).step is Step.BUSY
        # ...after it, the turn is sent again and the match goes on.
        clock.advance(DEADLINE_MS / 1000 + LEASE_GRACE_S + 0.001)
        await drain(arena)
        body = await transcript(b.api, match_id)

    first, again = b.attacker.turns[0], b.attacker.turns[1]
    assert orjson.dumps(first) == orjson.dumps(again)
    assert b.attacker.keys[:2] == [f"{match_id}:1"] * 2
    assert body["turns"][0]["message"] == moves[f"{match_id}:1"]
    assert body["turns"][0]["findings"] == {"sends": 2}
    assert summary(body) == ("SCORED", "draw", "utility", 6)


async def test_a_turn_recorded_by_another_worker_is_not_recorded_twice(arena: Platform) -> None:
    async with bout(arena, injects, refuses) as b:
        match_id = await start(b.api, b.alice, b.attacker_id, b.defender_id)
        first = await play_next_turn(arena, match_id)
        assert (first.step, first.turn) == (Step.PLAYED, 1)
        await drain(arena)
        assert (await play_next_turn(arena, match_id)).step is Step.FINISHED
        body = await transcript(b.api, match_id)
    assert [t["turn"] for t in b.attacker.turns] == [1, 3, 5]
    assert summary(body) == ("SCORED", "draw", "utility", 6)


def held_until(gate: asyncio.Event, script: Script) -> Script:
    """``script``, answering only once ``gate`` is open."""

    async def play(body: dict[str, Any]) -> str:
        await gate.wait()
        result = script(body)
        assert isinstance(result, str)
        return result

    return play


async def test_two_workers_on_one_match_play_each_turn_once(arena: Platform) -> None:
    arena.settings.cage_turn_deadline_ms = 30_000  # the held move must not time out meanwhile
    gate = asyncio.Event()
    async with bout(arena, held_until(gate, injects), held_until(gate, refuses)) as b:
        match_id = await start(b.api, b.alice, b.attacker_id, b.defender_id)
        for _ in range(3):
            # While one worker's move is in flight, the other finds the turn taken.
            gate.clear()
            workers = [asyncio.create_task(play_next_turn(arena, match_id)) for _ in range(2)]
            done, pending = await asyncio.wait(workers, timeout=10, return_when="FIRST_COMPLETED")
            assert [t.result().step for t in done] == [Step.BUSY]
            gate.set()
            assert [(await t).step for t in pending] == [Step.PLAYED]
        await asyncio.gather(Referee(arena).run_once(), Referee(arena).run_once())
        body = await transcript(b.api, match_id)
    assert [t["turn"] for t in b.attacker.turns + b.defender.turns] == [1, 3, 5, 2, 4, 6]
    assert summary(body) == ("SCORED", "draw", "utility", 6)


# Who may play, and who may start a match.


async def test_a_registration_whose_echo_is_wrong_is_refused_and_never_gets_a_turn(
    arena: Platform,
) -> None:
    liar = CageHarness(injects, echo=False)
    async with running(arena) as api, serve(liar) as endpoint:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        fighter = await create_fighter(api, alice, "harness")
        status, body = await api.call(
            "POST",
            "/api/fighters/endpoint",
            json={
                "fighter_id": fighter.fighter_id,
                "claim_code": fighter.claim_code,
                "url": endpoint.url("/"),
                "harness_name": "liar",
                "sandbox_attested": True,
            },
        )
        assert (status, body["code"]) == (400, "invalid-request")
        opponent = await create_fighter(api, bob, "house")
        for attacker, defender in [
            (fighter.fighter_id, opponent.fighter_id),
            (opponent.fighter_id, fighter.fighter_id),
        ]:
            assert await api.call(
                "POST",
                "/api/matches",
                token=ADMIN_TOKEN,
                json={"attacker": attacker, "defender": defender},
            ) == (
                409,
                {
                    "error": f"fighter {fighter.fighter_id} is PENDING, not ACTIVE",
                    "code": "conflict",
                },
            )
        await drain(arena)
        assert await api.call("GET", "/api/matches") == (200, [])
    assert (liar.challenges, liar.turns) == (1, [])


NOT_YOURS = "an owner can only start matches in which one of its fighters plays"


async def test_who_may_start_a_match(arena: Platform) -> None:
    async with running(arena) as api:
        alice, bob, carol = [await api.owner(n) for n in ("alice", "bob", "carol")]
        a1 = (await create_fighter(api, alice, "house")).fighter_id
        a2 = (await create_fighter(api, alice, "house")).fighter_id
        b1 = (await create_fighter(api, bob, "house")).fighter_id
        missing = "01900000-0000-7000-8000-000000000000"

        def body(attacker: str, defender: str) -> dict[str, str]:
            return {"attacker": attacker, "defender": defender}

        cases = [
            (None, body(a1, b1), 401, "Missing bearer token"),
            (alice, body(a1, a1), 400, "a fighter cannot fight itself"),
            (alice, body(a1, a2), 400, "co-owned fighters cannot fight each other"),
            (carol, body(a1, b1), 403, NOT_YOURS),
            (alice, body(a1, missing), 404, f"Fighter {missing} not found"),
        ]  # fmt: skip
        for token, sent, status, error in cases:
            answer = await api.call("POST", "/api/matches", token=token, json=sent)
            assert answer[0] == status, (sent, answer)
            assert answer[1]["error"] == error
        status, extra = await api.call(
            "POST", "/api/matches", token=alice, json={**body(a1, b1), "seed": 1}
        )
        assert (status, extra["code"]) == (422, "invalid-request")
        for token in (alice, bob, ADMIN_TOKEN):
            status, created = await api.call("POST", "/api/matches", token=token, json=body(b1, a1))
            assert status == 202, created


# What a transcript shows, and when.


async def test_secrets_are_shown_only_once_the_match_is_over(arena: Platform) -> None:
    async with bout(arena, injects, refuses) as b:
        match_id = await start(b.api, b.alice, b.attacker_id, b.defender_id)
        pending = await transcript(b.api, match_id)
        assert (pending["status"], pending["turns"], pending["material"], pending["seed"]) == (
            "PENDING",
            [],
            None,
            None,
        )
        await play_next_turn(arena, match_id)
        await play_next_turn(arena, match_id)
        mid = await transcript(b.api, match_id)
        raw = orjson.dumps(mid).decode()
        secret = await secret_material(arena, match_id)
        assert mid["status"] == "RUNNING"
        assert [t["payload"] for t in mid["turns"]] == [None, None]
        assert [t["message"] for t in mid["turns"]] == [injects({}), refuses({})]
        for hidden in (secret["access_code"], secret["hijack_phrase"], secret["fence_key"]):
            assert hidden not in raw
        assert secret["task"]["context"] not in raw

        await drain(arena)
        body = await transcript(b.api, match_id)
    assert body["material"] == draw_material(body["seed"]).as_dict()
    assert all(t["payload"] for t in body["turns"])


async def test_entrants_are_recorded_with_their_labels(arena: Platform) -> None:
    async with bout(arena, injects, refuses) as b:
        _, body = await b.play(arena)
    assert body["attacker"] == {
        "fighter_id": b.attacker_id,
        "name": "harness-fighter",
        "entrant_type": "harness",
        "class": "rogue",
        "sandbox_attested": True,
        "harness_name": "scripted",
        "executor": "harness",
    }
    assert body["defender"]["sandbox_attested"] is False


async def test_matches_are_listed_newest_first_and_never_show_keys(
    arena: Platform, clock: FrozenClock
) -> None:
    chat = ChatServer()
    async with running(arena) as api, serve(chat) as provider:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        model = {"base_url": provider.url("/v1"), "model": "tiny-1", "api_key": MODEL_KEY}
        m = await create_fighter(api, alice, "model", model=model)
        h = await create_fighter(api, bob, "house")
        ids = []
        for _ in range(3):
            ids.append(await start(api, alice, m.fighter_id, h.fighter_id))
            clock.advance(1)
        await drain(arena)
        status, listed = await api.call("GET", "/api/matches")
        assert status == 200
        assert [row["match_id"] for row in listed] == ids[::-1]
        assert all("turns" not in row and "material" not in row for row in listed)
        assert (await api.call("GET", "/api/matches?limit=1"))[1][0]["match_id"] == ids[-1]
        assert (await api.call("GET", "/api/matches?limit=0"))[0] == 422
        texts = [orjson.dumps(listed)] + [orjson.dumps(await transcript(api, i)) for i in ids]
        missing = "01900000-0000-7000-8000-000000000000"
        assert await api.call("GET", f"/api/matches/{missing}") == (
            404,
            {"error": f"Match {missing} not found", "code": "not-found"},
        )
    for text in texts:
        assert MODEL_KEY.encode() not in text
        assert m.claim_code.encode() not in text
        assert h.claim_code.encode() not in text


async def test_the_background_referee_plays_a_match_posted_to_the_api(platform: Platform) -> None:
    platform.settings.cage_turn_deadline_ms = DEADLINE_MS
    assert platform.settings.referee_enabled
    async with running(platform) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        one = await create_fighter(api, alice, "house")
        two = await create_fighter(api, bob, "house")
        match_id = await start(api, alice, one.fighter_id, two.fighter_id)
        body = await transcript(api, match_id)
        for _ in range(500):
            if body["status"] in ("SCORED", "VOIDED"):
                break
            await asyncio.sleep(0.01)
            body = await transcript(api, match_id)
    assert summary(body) == ("SCORED", "defender", "utility", 6)


async def against_stored_model(arena: Platform, **stored: Any) -> tuple[dict[str, Any], ChatServer]:
    """A match against a model defender whose stored row is then given ``stored`` (as a
    row written before today's checks could be): its transcript, and the model's server."""
    chat = ChatServer()
    async with running(arena) as api, serve(chat) as provider, serve(CageHarness(injects)) as h:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        model = {"base_url": provider.url("/v1"), "model": "tiny-1", "api_key": MODEL_KEY}
        defender = await create_fighter(api, bob, "model", model=model, friendly=True)
        async with arena.db.session() as session, session.begin():
            await session.execute(
                update(Agent).where(Agent.id == defender.fighter_id).values(**stored)
            )
        attacker = await register(api, alice, h.url("/"))
        match_id = await start(api, alice, attacker.fighter_id, defender.fighter_id)
        await drain(arena)
        return await transcript(api, match_id), chat


@pytest.mark.parametrize(
    "base_url",
    ["https://a..com/v1", f"https://{'a' * 64}.com/v1", "https://exa mple.com/v1"],
    ids=["empty-label", "long-label", "space"],
)
async def test_a_model_entrants_unusable_url_is_its_own_failed_turn(
    arena: Platform, base_url: str
) -> None:
    """A base URL stored before URLs were checked as they are now, or that cannot be
    resolved, fails the entrant's turns; it is not the arena's fault."""
    body, chat = await against_stored_model(
        arena, provider={"base_url": base_url, "model": "tiny-1"}
    )
    assert summary(body) == ("SCORED", "attacker", "forfeit", 4)
    assert body["turns"][1]["status"] == "FAILED"
    assert "arena fault" not in (body["turns"][1]["reason"] or "")
    assert chat.requests == []


async def test_a_model_key_the_arena_cannot_open_voids_the_match(arena: Platform) -> None:
    body, chat = await against_stored_model(arena, provider_key_sealed="not-a-sealed-key")
    assert summary(body) == ("VOIDED", None, None, 2)
    assert body["turns"][1]["reason"].startswith("arena fault: ")
    assert chat.requests == []
