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
from palaestra.demo.lineup import HOUSE, LAB, LINEUP, Entry
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
    tokens: Mapping[str, str],
    urls: Mapping[str, str],
    model: DemoModel,
    say: Callable[[str], None],
) -> tuple[Fighters, list[str]]:
    """The cage fighters and notes on any left out. ``tokens`` are the owners' by name: each
    harness its entry's owner's (demo-lab's but for cage-leaky), each seat its own, any model
    demo-lab's, the house entrant arena-house's."""
    fighters: Fighters = {}
    notes: list[str] = []
    for harness in (e for e in LINEUP if e.role is None):
        url = urls[harness.name]
        if not harness.seats:
            name = harness.harness_name or harness.name
            fighters[harness.name] = await _harness(
                api, tokens, harness.name, harness.owner, url, name
            )
            continue
        listed = await _listing(api, url)
        for seat in harness.seats:
            name = listed.get(seat.name, seat.name)
            fighters[seat.name] = await _harness(
                api, tokens, seat.name, seat.owner, url + seat.name, name
            )
    house = await api.call(
        "POST",
        "/api/fighters",
        tokens[HOUSE],
        {"name": "house-sentinel", "entrant_type": "house", "class": "corporate"},
        expect=201,
    )
    fighters["house-sentinel"] = (house["fighter_id"], HOUSE)
    settings = Settings()
    if settings.house_base_url and settings.house_model:
        key = settings.house_api_key.get_secret_value() if settings.house_api_key else "none"
        remote = {"base_url": settings.house_base_url, "model": settings.house_model}
        fighters["model"] = await _model_fighter(
            api, tokens[LAB], settings.house_model, remote | {"api_key": key}
        )
    if model.on and model.model_id is not None:
        fighters["model-local"] = await _model_fighter(
            api, tokens[LAB], model.model_id, {"model": LOCAL_MODEL}
        )
    if "model" not in fighters and not model.on:
        notes.append(
            "no model entrant: install the local model (make install-local), or set "
            "PALAESTRA_HOUSE_BASE_URL and PALAESTRA_HOUSE_MODEL for a remote one"
        )
    say(f"cage fighters: {', '.join(fighters)}")
    return fighters, notes


async def _listing(api: Api, url: str) -> dict[str, str]:
    """The harness names a process serving several fighters lists at ``url``, by fighter."""
    async with api.session.get(url) as response:
        body = await response.json(content_type=None)
    return {f["name"]: f["harness_name"] for f in body.get("fighters", [])}


async def _harness(
    api: Api, tokens: Mapping[str, str], name: str, owner: str, url: str, harness_name: str
) -> tuple[str, str]:
    """A ``harness`` fighter of ``owner``'s at ``url``, its endpoint proven: its id and owner."""
    created = await api.call(
        "POST",
        "/api/fighters",
        tokens[owner],
        {"name": name, "entrant_type": "harness", "class": "independent"},
        expect=201,
    )
    await api.call(
        "POST",
        "/api/fighters/endpoint",
        tokens[owner],
        {
            "fighter_id": created["fighter_id"],
            "claim_code": created["claim_code"],
            "url": url,
            "harness_name": harness_name,
        },
    )
    return created["fighter_id"], owner


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
    return created["fighter_id"], LAB


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
        # Every pairing of fighters of different owners, both seat orders; a seat of the
        # lineup plays only its own side.
        sides = {seat.name: seat.side for entry in LINEUP for seat in entry.seats}
        pairs = [
            (attacker, defender)
            for attacking, (attacker, attacker_owner) in fighters.items()
            for defending, (defender, defender_owner) in fighters.items()
            if attacker_owner != defender_owner
            and sides.get(attacking, "attacker") == "attacker"
            and sides.get(defending, "defender") == "defender"
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
