"""The demo with and without the local model: what it plays, the load it allows, the fallback."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from palaestra.demo.lineup import LINEUP
from palaestra.demo.local import MATCHES_AT_ONCE, MODEL_RUN_SIZES, DemoModel, demo_model
from palaestra.demo.model_agents import ROLES, with_local_model
from palaestra.harness import LocalModelChat, ModelUnavailable, Phase, Reply, Task, TaskKind
from palaestra.settings import Settings


def test_turned_off_the_demo_plays_no_model_and_says_why() -> None:
    model = demo_model(Settings(local_model_enabled=False))
    assert not model.on
    assert model.server_environment() == {}
    assert model.run_sizes() == {}
    assert model.describe() == (
        "no local model (PALAESTRA_LOCAL_MODEL_ENABLED is false): the agents and the house "
        "answer with their offline baselines"
    )


def test_a_missing_model_file_is_said_with_the_way_to_install() -> None:
    model = demo_model(
        Settings(local_model_enabled=True, local_model_path="/nonexistent/model.gguf")
    )
    assert not model.on
    assert "make install-local" in model.why_not or "not installed" in model.why_not


def test_with_the_model_one_match_at_a_time_and_no_scout_slot_for_the_house() -> None:
    model = DemoModel("gemma-3-270m-q4_k_m")
    assert model.on
    assert MATCHES_AT_ONCE == 1
    assert model.server_environment() == {"PALAESTRA_REFEREE_CONCURRENCY": "1"}
    assert model.run_sizes() == {"sizes": MODEL_RUN_SIZES}
    # As many scout slots as the lineup's scouts that pass their wizard (all but the sloppy one).
    scouts = [e for e in LINEUP if e.role == "SCOUT" and e.name != "scout-sloppy"]
    assert MODEL_RUN_SIZES["scouts"] == len(scouts)
    assert model.describe().startswith("the local model gemma-3-270m-q4_k_m answers for")


def test_only_the_good_agents_change_target_with_the_model() -> None:
    changed = {e.name: e.target_for(True) for e in LINEUP if e.target_for(True) != e.target}
    assert changed == {
        "scout-atlas": "palaestra.demo.model_agents:scout",
        "builder-forge": "palaestra.demo.model_agents:builder",
        "analyst-lens": "palaestra.demo.model_agents:analyst",
    }
    assert all(e.target_for(False) == e.target for e in LINEUP)
    assert {target.split(":")[1] for target in changed.values()} == set(ROLES)


class ScriptedModel:
    """Answers as told: a reply, or the failure a late model raises."""

    def __init__(self, answer: Reply | None) -> None:
        self.answer = answer
        self.asked: list[Task] = []

    async def reply(self, task: Task) -> Reply:
        self.asked.append(task)
        if self.answer is None:
            raise ModelUnavailable("the local model did not answer within the task's deadline")
        return self.answer


def task(kind: TaskKind) -> Task:
    return Task(Phase.SCOUT, kind, "task-1", (), 30_000, kind is TaskKind.DISPATCH, goal="x")


def baseline(_task: Task) -> dict[str, Any]:
    return {"from": "baseline"}


@pytest.mark.parametrize(
    ("kind", "answer", "expected", "asked"),
    [
        (TaskKind.DISPATCH, Reply({"from": "model"}, model_id="gemma"), "model", 1),
        (TaskKind.DISPATCH, None, "baseline", 1),  # late: the baseline answers in time
        (TaskKind.SIMULATION, Reply({"from": "model"}), "baseline", 0),  # wizard: no generation
    ],
)
def test_the_model_answers_dispatches_and_the_baseline_the_rest(
    kind: TaskKind, answer: Reply | None, expected: str, asked: int
) -> None:
    model = ScriptedModel(answer)
    handler = with_local_model(cast(LocalModelChat, model), baseline)
    result = asyncio.run(handler(task(kind)))
    output = result.output if isinstance(result, Reply) else result
    assert output["from"] == expected
    assert len(model.asked) == asked
