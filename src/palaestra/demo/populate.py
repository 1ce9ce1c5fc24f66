"""What the demo does through the API, as an owner and the admin would.

Register the edgearena agents (the probe runs, keys are issued), run the
registration wizard on each, add the cage fighters, and start a run and a
round of matches when this build has those APIs. Each step reports through
``say`` and hands back what the next one needs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Final

from palaestra.demo.api import ADMIN_TOKEN, Api
from palaestra.demo.lineup import LINEUP, Entry
from palaestra.demo.local import DemoModel
from palaestra.providers.local import LOCAL_MODEL
from palaestra.settings import Settings

__all__ = ["GOAL", "Fighters", "add_fighters", "register_agents", "run_wizards", "start_play"]

GOAL: Final = "Find a small business a two-person team could start this quarter"

#: Each fighter's id and its owner's name, by fighter name.
Fighters = dict[str, tuple[str, str]]


async def register_agents(
    api: Api, owner_token: str, urls: Mapping[str, str]
) -> dict[str, tuple[str, str]]:
    """Register every edgearena agent of the lineup at its URL: each one's id and key."""
    registered: dict[str, tuple[str, str]] = {}

    async def one(entry: Entry) -> None:
        created = await api.call(
            "POST",
            "/api/agents",
            owner_token,
            {"name": entry.name, "role": entry.role, "endpoint_url": urls[entry.name]},
            expect=201,
        )
        registered[entry.name] = (created["agent_id"], created["api_key"])

    await asyncio.gather(*(one(e) for e in LINEUP if e.role is not None))
    return registered


async def run_wizards(
    api: Api, owner_token: str, agent_ids: Mapping[str, str], say: Callable[[str], None]
) -> dict[str, str]:
    """Run the registration wizard on every edgearena agent: each one's status after it."""
    statuses: dict[str, str] = {}

    async def one(entry: Entry) -> None:
        path = f"/api/agents/{agent_ids[entry.name]}/wizard"
        result = await api.call("POST", path, owner_token)
        failed = [c for c in result["checks"] if not (c["passed"] or c["advisory"])]
        statuses[entry.name] = result["status"]
        total = len(result["checks"])
        verdict = "passed" if result["passed"] else f"{len(failed)} of {total} checks failed"
        first = f": {failed[0]['name']}: {failed[0]['reason']}" if failed else ""
        if result["warnings"]:
            first += f" (warning: {'; '.join(result['warnings'])})"
        say(f"  wizard {entry.name:<17} {verdict}, now {result['status']}{first}")

    say("running the registration wizard on each:")
    await asyncio.gather(*(one(e) for e in LINEUP if e.role is not None))
    return statuses


async def add_fighters(
    api: Api,
    owner_token: str,
    house_token: str,
    urls: Mapping[str, str],
    model: DemoModel,
    say: Callable[[str], None],
) -> tuple[Fighters, list[str]]:
    """The cage fighters and notes on any left out: the harnesses and any model are demo-lab's,
    the house entrant arena-house's."""
    fighters: Fighters = {}
    notes: list[str] = []
    for harness in (e for e in LINEUP if e.role is None):
        created = await api.call(
            "POST",
            "/api/fighters",
            owner_token,
            {"name": harness.name, "entrant_type": "harness", "class": "independent"},
            expect=201,
        )
        await api.call(
            "POST",
            "/api/fighters/endpoint",
            owner_token,
            {
                "fighter_id": created["fighter_id"],
                "claim_code": created["claim_code"],
                "url": urls[harness.name],
                "harness_name": harness.harness_name or harness.name,
            },
        )
        fighters[harness.name] = (created["fighter_id"], "demo-lab")
    house = await api.call(
        "POST",
        "/api/fighters",
        house_token,
        {"name": "house-sentinel", "entrant_type": "house", "class": "corporate"},
        expect=201,
    )
    fighters["house-sentinel"] = (house["fighter_id"], "arena-house")
    settings = Settings()
    if settings.house_base_url and settings.house_model:
        key = settings.house_api_key.get_secret_value() if settings.house_api_key else "none"
        remote = {"base_url": settings.house_base_url, "model": settings.house_model}
        fighters["model"] = await _model_fighter(
            api, owner_token, settings.house_model, remote | {"api_key": key}
        )
    if model.on and model.model_id is not None:
        fighters["model-local"] = await _model_fighter(
            api, owner_token, model.model_id, {"model": LOCAL_MODEL}
        )
    if "model" not in fighters and not model.on:
        notes.append(
            "no model entrant: install the local model (make install-local), or set "
            "PALAESTRA_HOUSE_BASE_URL and PALAESTRA_HOUSE_MODEL for a remote one"
        )
    say(f"cage fighters: {', '.join(fighters)}")
    return fighters, notes


async def _model_fighter(
    api: Api, owner_token: str, name: str, provider: Mapping[str, str]
) -> tuple[str, str]:
    """A ``model`` fighter of demo-lab's playing ``provider``: its id and owner."""
    created = await api.call(
        "POST",
        "/api/fighters",
        owner_token,
        {
            "name": f"model-{name}"[:200],
            "entrant_type": "model",
            "class": "academic",
            "model": dict(provider),
        },
        expect=201,
    )
    return created["fighter_id"], "demo-lab"


async def start_play(
    api: Api,
    owner_token: str,
    fighters: Fighters,
    model: DemoModel,
    say: Callable[[str], None],
) -> list[str]:
    """Start a run and every cage match between fighters of different owners, when this
    build has those APIs; notes on what it has not."""
    notes: list[str] = []
    async with api.session.get(api.base + "/openapi.json") as response:
        paths = (await response.json()).get("paths", {})
    if "post" in paths.get("/api/runs", {}):
        run = await api.call(
            "POST",
            "/api/runs",
            owner_token,
            {"goal": GOAL, "launchpad": "make-money"} | model.run_sizes(),
            expect=202,
        )
        say(f"started a run: {GOAL!r} ({run['run_id']})")
    else:
        notes.append("this build has no runs API yet: no run started")
    if "post" in paths.get("/api/matches", {}):
        # Every pairing of fighters of different owners, both seat orders.
        entrants = list(fighters.values())
        pairs = [
            (attacker, defender)
            for attacker, attacker_owner in entrants
            for defender, defender_owner in entrants
            if attacker_owner != defender_owner
        ]
        for attacker, defender in pairs:
            await api.call(
                "POST",
                "/api/matches",
                ADMIN_TOKEN,
                {"attacker": attacker, "defender": defender},
                expect=202,
            )
        say(f"started {len(pairs)} cage matches")
    else:
        notes.append("this build has no matches API yet: no match started")
    return notes
