"""The agent author's SDK: handler functions in, a compliant agent endpoint out.

    from palaestra.harness import Agent, Task

    agent = Agent()  # the key comes from PALAESTRA_AGENT_KEY

    @agent.scout
    def scout(task: Task) -> dict:
        return {"candidate_title": ..., ...}

    app = agent.app()  # palaestra agent serve mymodule:app

One URL answers both protocols: liveness, the edgearena-v1 handshake,
simulations and signed dispatches (verified over the raw body first), and
cage.v1 challenges and turns. A dispatch's output is checked against the
phase's full schema before it is sent, a simulation's reply only for the
role's required keys (as the registration wizard checks it), and repeated
taskIds and idempotency keys get the first answer again. Answers are
synchronous: a result is a 200, never a 202 deferring to the async completion
callback.
"""

from palaestra.harness.agent import Agent
from palaestra.harness.asgi import AgentApp
from palaestra.harness.llm import InvalidModelOutput, ModelUnavailable, OpenAIChat
from palaestra.harness.local_llm import LocalModelChat
from palaestra.harness.replies import HttpReply, MemoryReplyStore, ReplyStore
from palaestra.harness.settings import AgentSettings
from palaestra.harness.tasks import (
    Reply,
    Task,
    TaskHandler,
    TaskKind,
    Turn,
    TurnHandler,
    UpstreamFailed,
)
from palaestra.protocol import Phase, Side
from palaestra.providers import Completion

__all__ = [
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
