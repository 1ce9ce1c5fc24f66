"""The SDK page's agent examples are real code: they run and the agent they build is compliant."""

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

DOCS = Path(__file__).resolve().parents[2] / "docs"
SDK_PAGE = DOCS / "agents" / "sdk.md"


def python_blocks(page: Path = SDK_PAGE) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(), re.DOTALL)


def run_block(source: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    exec(compile(source, str(SDK_PAGE), "exec"), namespace)  # noqa: S102 (our own docs)
    return namespace


async def test_the_short_example_is_a_compliant_scout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PALAESTRA_AGENT_KEY", "docs-key")
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
        "docs-key", "http://agent.test/", body, int(SystemClock().now())
    ).as_dict()
    dispatch = await call(app, "POST", body=body, headers=headers)
    assert dispatch.status == 200, dispatch.body
    assert set(orjson.loads(dispatch.body)) == {
        "output",
        "promptTokens",
        "completionTokens",
        "modelId",
    }


def test_getting_started_shows_the_same_short_example() -> None:
    (first,) = python_blocks(DOCS / "getting-started.md")
    assert " ".join(first.split()) == " ".join(python_blocks()[0].split())


def test_the_readme_shows_the_same_short_example() -> None:
    readme = DOCS.parent / "README.md"
    first = python_blocks(readme)[0]
    assert " ".join(first.split()) == " ".join(python_blocks()[0].split())


def test_the_model_example_builds_an_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    namespace = run_block(python_blocks()[1])
    agent = namespace["agent"]
    assert isinstance(agent, Agent)
    assert Phase.SCOUT in agent.tasks
    assert len(agent.turns) == 2
