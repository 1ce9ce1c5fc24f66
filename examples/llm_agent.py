"""An agent backed by any OpenAI-compatible chat model, for every role and the cage.

    export OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=... MODEL=gpt-4o-mini
    PALAESTRA_AGENT_KEY=<key> palaestra agent serve examples.llm_agent:app --port 9005
    palaestra check http://127.0.0.1:9005/ --role SCOUT --key <key> --allow 127.0.0.0/8

The platform's messages go to the model verbatim in JSON mode; the answer is
checked against the phase's schema and, if it fails, the model is asked once
more with the exact reason. Register it under any one role.
"""

from __future__ import annotations

from typing import Any

from palaestra.harness import Agent, OpenAIChat, Phase

__all__ = ["app", "create_agent"]


def create_agent(model: OpenAIChat | None = None, key: str | None = None, **options: Any) -> Agent:
    """The agent; ``model`` defaults to :meth:`OpenAIChat.from_env`."""
    chat = model or OpenAIChat.from_env()
    agent = Agent(key, name=f"llm-agent ({chat.model})", **options)
    agent.handles(Phase.SCOUT, Phase.BUILD, Phase.VERIFY, Phase.CRITIQUE)(chat.reply)
    agent.fight(chat.message)
    agent.on_shutdown(chat.aclose)
    return agent


app = create_agent().app()
