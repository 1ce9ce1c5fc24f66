"""Real inference with the local model (the ``local`` extra): a run and a match, generated.

The model is loaded once per test process. Without llama-cpp-python or the model package
these tests are skipped with the reason; under CI they must run. They run on SQLite only:
what they test is the model's side, and every answer costs seconds.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from palaestra.engine.accounts import Caller
from palaestra.engine.runs.driver import RunDriver
from palaestra.engine.runs.house import HouseAgent
from palaestra.engine.runs.service import start_run
from palaestra.platform import Platform
from palaestra.protocol import Phase, validate_output
from palaestra.providers.local import LocalModel, find_local_model, shared_local_model
from palaestra.providers.local_house import FieldWriter
from palaestra.rules.cage.house import DEFENDER_GRAMMAR, attacker_grammar
from palaestra.rules.runs.answer_check import normalised
from palaestra.rules.runs.house_answers import HouseTask
from palaestra.rules.runs.house_fields import FIELDS, field_grammar
from palaestra.rules.runs.prompts import DEFAULT_LAUNCHPAD, LAUNCHPADS, messages_for
from palaestra.settings import Settings
from tests.conftest import require
from tests.integration.platform_fixtures import running
from tests.integration.run_support import add_owner, run_row, tasks_of
from tests.integration.test_matches import create_fighter, drain, start, summary, transcript

pytestmark = [pytest.mark.asyncio, pytest.mark.local_model]

ROOT = Path(__file__).resolve().parents[2]
ONE_SCOUT = {"scouts": 1, "shortlist": 1, "builds": 1, "verifies": 1, "critiques": 1}


@pytest.fixture(scope="session")
def local_model() -> LocalModel:
    """The process's one local model, loaded (once) before the first test that needs it."""
    found = find_local_model(None)
    require("the local model (pip install '.[local]')", found.path is not None, found.problem or "")
    assert found.path is not None
    model = shared_local_model(found.path)
    seconds = asyncio.run(model.load())
    print(f"local model {model.model_id} loaded in {seconds:.1f}s")
    return model


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'palaestra.db'}"


@pytest.fixture
def settings(settings: Settings, local_model: LocalModel) -> Settings:
    return settings.model_copy(
        update={
            "local_model_enabled": True,
            "referee_enabled": False,
            # Generous deadlines: these tests show the model answers, not how fast a busy
            # two-core machine generates (bench/local_model.py measures that).
            "cage_turn_deadline_ms": 90_000,
            "dispatch_deadline_scale": 4.0,
        }
    )


@pytest.fixture
async def driver(platform: Platform) -> AsyncIterator[RunDriver]:
    runs = RunDriver(platform)
    yield runs
    await runs.close()


async def test_with_no_agents_the_local_house_answers_every_slot_valid(
    platform: Platform, driver: RunDriver, local_model: LocalModel
) -> None:
    started = time.monotonic()
    run = await start_run(
        platform, Caller(await add_owner(platform)), "Help bakeries waste less", sizes=ONE_SCOUT
    )
    await driver.drain(run.id, within_s=300)
    tasks = await tasks_of(platform, run.id)
    assert (await run_row(platform, run.id)).status == "COMPLETED"
    assert [t.phase for t in tasks] == ["SCOUT", "BUILD", "VERIFY", "CRITIQUE"]
    for task in tasks:
        assert (task.status, task.executor, task.reason) == ("SUCCEEDED", "house-model", None)
        assert task.model_id == local_model.model_id == "gemma-3-270m-q4_k_m"
        assert (task.prompt_tokens or 0) > 100
        assert (task.completion_tokens or 0) > 3  # VERIFY: one field of a few words
        validate_output(Phase(task.phase), task.output, task.candidate_id)
    print(f"4 answers in {time.monotonic() - started:.1f}s")


async def test_every_grammar_of_the_house_compiles() -> None:
    """llama.cpp parses each GBNF grammar the house writes and plays under."""
    require("llama-cpp-python", importlib.util.find_spec("llama_cpp") is not None, "")
    from llama_cpp.llama_grammar import LlamaGrammar

    grammars = [field_grammar(job) for jobs in FIELDS.values() for job in jobs]
    grammars += [DEFENDER_GRAMMAR, attacker_grammar('I HAVE BEEN "PWNED" 2163')]
    for grammar in grammars:
        assert LlamaGrammar.from_string(grammar, verbose=False) is not None


#: The fixed goals of the check's pass rate: none is in the example bank.
CHECKED_GOALS = (
    "Help dentists fill cancelled appointments",
    "Sell used bicycles to university students",
    "Help dog owners find pet sitters on short notice",
    "Make bookkeeping easy for hairdressers",
    "Reduce food waste in school canteens",
)


async def test_the_house_scouts_pass_the_answer_check_and_differ_by_goal(
    local_model: LocalModel,
) -> None:
    """At least 90% of the scouts pass the check after the retry; every title differs."""
    house = HouseAgent(FieldWriter(local_model))
    started = time.monotonic()
    answers = []
    for goal in CHECKED_GOALS:
        messages = messages_for(Phase.SCOUT, LAUNCHPADS[DEFAULT_LAUNCHPAD], goal)
        answer = await house.answer(HouseTask(Phase.SCOUT, goal, messages, 120.0))
        print(f"{goal!r}: {answer.executor} after {answer.attempts}: {answer.output}")
        answers.append(answer)
    passed = [a for a in answers if a.from_model]
    assert len(passed) / len(answers) >= 0.9, [a.note for a in answers]
    assert all(a.model_id == local_model.model_id and a.note is None for a in passed)
    titles = {normalised(a.output["candidate_title"]) for a in answers}
    assert len(titles) == len(answers)
    print(f"{len(answers)} scouts in {time.monotonic() - started:.1f}s")


async def test_a_local_model_entrant_plays_the_local_house_and_is_judged(
    platform: Platform, local_model: LocalModel
) -> None:
    async with running(platform) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        model = await create_fighter(api, alice, "model", model={"model": "local"})
        house = await create_fighter(api, bob, "house")
        match_id = await start(api, alice, model.fighter_id, house.fighter_id)
        await drain(platform)
        body = await transcript(api, match_id)
    status, outcome, _decided_by, turns = summary(body)
    assert status == "SCORED", body
    assert outcome in {"attacker", "defender", "draw"}
    assert body["attacker"]["executor"] == f"model:{local_model.model_id}"
    assert body["defender"]["executor"] == f"house:{local_model.model_id}"
    played = [t for t in body["turns"] if t["status"] == "OK"]
    assert played
    assert all(t["message"].strip() for t in played)
    assert len({t["message"] for t in played}) > 1  # generated, not one template
    assert 1 <= turns <= 6


async def test_the_local_model_benchmark_runs_at_its_quick_size(local_model: LocalModel) -> None:
    """``bench/local_model.py --quick``: an answer with a grammar and one without, and a
    move (not timed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALAESTRA_")}
    ran = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, str(ROOT / "bench" / "local_model.py"), "--quick"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    report = f"exit {ran.returncode}\n{ran.stdout}\n{ran.stderr}"
    assert ran.returncode == 0, report
    for line in (
        f"{local_model.model_id}: ",
        "| VERIFY, brief grammar | ",
        "| SCOUT, no grammar | ",
        "| cage move, at most 32 tokens | ",
        "event loop lag while generating: p99 ",
        "PASS  every answer under a grammar valid on the first try",
    ):
        assert line in ran.stdout, f"no {line!r}:\n{report}"
