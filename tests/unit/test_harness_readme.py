"""The README's agent examples are real code: they run and the agent they build is compliant."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from palaestra.checks.payloads import dispatch_for
from palaestra.checks.samples import simulation_for
from palaestra.clock import SystemClock
from palaestra.harness import Agent, AgentApp, Phase
from palaestra.harness.testing import call
from palaestra.protocol import Role, dumps, signed_headers

README = Path(__file__).resolve().parents[2] / "README.md"


def python_blocks() -> list[str]:
    text = README.read_text()
    section = text[text.index("## Build an agent") : text.index("## Check an agent")]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


def run_block(source: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(source, str(README), "exec"), namespace)  # noqa: S102 (our own README)
    return namespace


async def test_the_short_example_is_a_compliant_scout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PALAESTRA_AGENT_KEY", "readme-key")
    first = python_blocks()[0]
    assert len(first.strip().splitlines()) <= 12
    namespace = run_block(first)
    app = namespace["app"]
    assert isinstance(app, AgentApp)

    simulation = await call(app, "POST", body=dumps(simulation_for(Role.SCOUT).wire()))
    assert simulation.status == 200, simulation.body

    payload = dispatch_for(Phase.SCOUT)
    body = dumps(payload.wire())
    headers = signed_headers(
        "readme-key", "http://agent.test/", body, int(SystemClock().now())
    ).as_dict()
    dispatch = await call(app, "POST", body=body, headers=headers)
    assert dispatch.status == 200, dispatch.body
    assert set(orjson.loads(dispatch.body)) == {
        "output",
        "promptTokens",
        "completionTokens",
        "modelId",
    }


def test_the_model_example_builds_an_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    namespace = run_block(python_blocks()[1])
    agent = namespace["agent"]
    assert isinstance(agent, Agent)
    assert Phase.SCOUT in agent.tasks
    assert len(agent.turns) == 2
