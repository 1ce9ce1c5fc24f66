"""Tasks and turns stored before answers carried their producer are labelled by the migration,
on both stores, from what can be told of them."""

from __future__ import annotations

import pytest
from sqlalchemy import JSON, bindparam, text

from palaestra.settings import Settings
from palaestra.store.db import migrate
from tests.integration.platform_fixtures import store_at

pytestmark = pytest.mark.asyncio

BEFORE, AFTER = "0009", "0010"
ENTRANTS = {
    "m-baseline": {"attacker": "harness", "defender": "house-baseline"},
    "m-model": {"attacker": "model:tiny-1", "defender": "house:gemma-3-270m-q4_k_m"},
}
TASKS = {  # id: (executor, via)
    "t-agent": ("scout-atlas", "sync"),
    "t-callback": ("scout-atlas", "callback"),
    "t-model": ("house-model", "house"),
    "t-baseline": ("house-baseline", "house"),
    "t-pending": ("scout-atlas", None),
}


async def test_stored_answers_are_labelled_with_their_producer(settings: Settings) -> None:
    async with store_at(settings, BEFORE) as db, db.engine.begin() as connection:
        await connection.execute(
            text(
                "INSERT INTO owners (id, name, token_hash, created_at) "
                "VALUES ('o1', 'bob', :hash, 1.0)"
            ),
            {"hash": "0" * 64},
        )
        for fighter in ("a1", "d1"):
            await connection.execute(
                text(
                    "INSERT INTO agents (id, owner_id, name, arena, entrant_type, "
                    "sandbox_attested, status, consecutive_failures, hold, reputation, "
                    "created_at, updated_at) VALUES (:id, 'o1', :id, 'cage', 'house', "
                    "false, 'ACTIVE', 0, false, 0.0, 1.0, 1.0)"
                ),
                {"id": fighter},
            )
        for match_id, executors in ENTRANTS.items():
            material = {
                "secret": {"access_code": "QUILL-1234-ZEBRA"},
                "entrants": {side: {"executor": e} for side, e in executors.items()},
            }
            await connection.execute(
                text(
                    "INSERT INTO matches (id, attacker_id, defender_id, ruleset, kind, "
                    "status, seed, material, deadline_ms, next_turn, created_at, "
                    "updated_at) VALUES (:id, 'a1', 'd1', 'cage.v1', 'rated', 'RUNNING', "
                    "1, :material, 60000, 3, 1.0, 1.0)"
                ).bindparams(bindparam("material", type_=JSON)),
                {"id": match_id, "material": material},
            )
            for turn, side, status in ((1, "attacker", "OK"), (2, "defender", "OK")):
                await connection.execute(
                    text(
                        "INSERT INTO turns (match_id, turn, side, fighter_id, status, "
                        "payload, started_at) VALUES (:m, :turn, :side, :fighter, "
                        ":status, 'p', 1.0)"
                    ),
                    {
                        "m": match_id,
                        "turn": turn,
                        "side": side,
                        "fighter": "a1" if side == "attacker" else "d1",
                        "status": status,
                    },
                )
            await connection.execute(
                text(
                    "INSERT INTO turns (match_id, turn, side, fighter_id, status, payload, "
                    "started_at) VALUES (:m, 3, 'attacker', 'a1', 'RUNNING', 'p', 1.0)"
                ),
                {"m": match_id},
            )
        await connection.execute(
            text(
                "INSERT INTO runs (id, goal, launchpad, status, phase, config, created_at, "
                "updated_at) VALUES ('r1', 'g', 'make-money', 'RUNNING', 'SCOUT', "
                ":config, 1.0, 1.0)"
            ).bindparams(bindparam("config", type_=JSON)),
            {"config": {}},
        )
        for slot, (task_id, (executor, via)) in enumerate(TASKS.items()):
            await connection.execute(
                text(
                    "INSERT INTO tasks (id, run_id, phase, slot, attempt, executor, status, "
                    "via, created_at) VALUES (:id, 'r1', 'SCOUT', :slot, 0, :executor, "
                    "'SUCCEEDED', :via, 1.0)"
                ),
                {"id": task_id, "slot": slot, "executor": executor, "via": via},
            )
        await connection.run_sync(lambda c: migrate(c, AFTER))
        turns = {
            (match_id, turn): (producer, model_id)
            for match_id, turn, producer, model_id in await connection.execute(
                text("SELECT match_id, turn, producer, model_id FROM turns")
            )
        }
        rows = await connection.execute(text("SELECT id, producer FROM tasks"))
        tasks: dict[str, str | None] = {row.id: row.producer for row in rows}
    assert turns == {
        ("m-baseline", 1): ("agent", None),
        ("m-baseline", 2): ("house_baseline", None),
        ("m-baseline", 3): (None, None),  # not played yet: labelled when it is
        ("m-model", 1): ("agent", "tiny-1"),
        ("m-model", 2): ("house_model", "gemma-3-270m-q4_k_m"),
        ("m-model", 3): (None, None),
    }
    assert tasks == {
        "t-agent": "agent",
        "t-callback": "agent",
        "t-model": "house_model",
        "t-baseline": "house_baseline",
        "t-pending": None,
    }
