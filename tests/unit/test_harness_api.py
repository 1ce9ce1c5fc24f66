"""The SDK's public surface: exports, registration, settings, the reply store."""

from __future__ import annotations

from typing import Any

import pytest

import palaestra.harness
from palaestra.errors import ConfigurationError
from palaestra.harness import (
    Agent,
    AgentSettings,
    HttpReply,
    MemoryReplyStore,
    OpenAIChat,
    Phase,
    Side,
    Task,
    Turn,
)


def test_public_api_is_pinned() -> None:
    assert sorted(palaestra.harness.__all__) == [
        "Agent",
        "AgentApp",
        "AgentSettings",
        "Completion",
        "HttpReply",
        "InvalidModelOutput",
        "LocalModelChat",
        "MemoryReplyStore",
        "ModelUnavailable",
        "OpenAIChat",
        "Phase",
        "Reply",
        "ReplyStore",
        "Side",
        "Task",
        "TaskHandler",
        "TaskKind",
        "Turn",
        "TurnHandler",
        "UpstreamFailed",
    ]
    for name in palaestra.harness.__all__:
        assert hasattr(palaestra.harness, name)


def scout(task: Task) -> dict[str, Any]:
    return {}


def move(turn: Turn) -> str:
    return ""


def test_decorators_register_and_return_the_function() -> None:
    agent = Agent(settings=AgentSettings())
    assert agent.scout(scout) is scout
    assert agent.builder(scout) is scout
    assert agent.analyst(scout) is scout
    assert agent.fight(move) is move
    assert set(agent.tasks) == set(Phase)
    assert set(agent.turns) == set(Side)


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        ("critique", "analyst", "a handler for CRITIQUE is already registered"),
        ("verify", "analyst", "a handler for VERIFY is already registered"),
        ("scout", "scout", "a handler for SCOUT is already registered"),
    ],
)
def test_a_phase_takes_one_handler(first: str, second: str, message: str) -> None:
    agent = Agent(settings=AgentSettings())
    getattr(agent, first)(scout)
    with pytest.raises(ConfigurationError, match=message):
        getattr(agent, second)(scout)
    assert agent.tasks.get(Phase.SCOUT) in (None, scout)


def test_a_side_takes_one_handler() -> None:
    agent = Agent(settings=AgentSettings())
    agent.attacker(move)
    with pytest.raises(ConfigurationError, match="a handler for attacker is already registered"):
        agent.fight(move)
    assert Side.DEFENDER not in agent.turns  # nothing half-registered


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PALAESTRA_AGENT_KEY", "from-env")
    monkeypatch.setenv("PALAESTRA_AGENT_PUBLIC_URL", "https://agents.example.com:8443/a")
    monkeypatch.setenv("PALAESTRA_AGENT_MODEL_ID", "env-model")
    agent = Agent()
    assert agent.key == "from-env"
    assert agent.public_target == "agents.example.com:8443/a"
    assert agent.model_id == "env-model"
    assert "from-env" not in repr(agent.settings)


def test_arguments_override_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PALAESTRA_AGENT_KEY", "from-env")
    agent = Agent("explicit", "https://a.example/", model_id="m")
    assert (agent.key, agent.public_target, agent.model_id) == ("explicit", "a.example/", "m")


def test_a_public_url_without_host_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="invalid public URL"):
        Agent(public_url="/just/a/path", settings=AgentSettings())


async def test_memory_store_keeps_the_most_recent_answers() -> None:
    store = MemoryReplyStore(max_entries=2)
    for key in ("a", "b"):
        await store.put(key, HttpReply(200, key.encode()))
    assert await store.get("a") is not None  # "a" is now the most recent
    await store.put("c", HttpReply(200, b"c"))
    assert await store.get("b") is None
    assert [await store.get(k) is not None for k in ("a", "c")] == [True, True]
    assert len(store) == 2


def test_memory_store_needs_room() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        MemoryReplyStore(0)


def test_llm_client_never_shows_its_key() -> None:
    chat = OpenAIChat("https://llm.example/v1/", "m", api_key="sk-secret")
    assert "sk-secret" not in repr(chat)
    assert chat.base_url == "https://llm.example/v1"


def test_llm_client_from_environment_variables() -> None:
    chat = OpenAIChat.from_env({"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "MODEL": "tiny"})
    assert (chat.base_url, chat.model) == ("http://127.0.0.1:1/v1", "tiny")
    default = OpenAIChat.from_env({})
    assert default.base_url == "https://api.openai.com/v1"
