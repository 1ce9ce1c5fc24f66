"""The demo's good scout, builder and analyst, answering with the local model.

Each is the repository's example agent with the local model in front of it,
through the SDK's :class:`~palaestra.harness.LocalModelChat`: a dispatched
task is answered by the model, generated under its phase's schema grammar
(brief: one item a list, 60 characters a text, about half the tokens) in
the agent's own process (its own model instance, so the agents and the
platform's house never wait on each other's generations). Two cases keep
the example's baseline answer, labelled with the baseline's ``modelId``:

- the registration wizard's simulations, so that registering takes seconds
  rather than a generation per check;
- a task the model cannot finish a second before its deadline (a busy
  machine): the answer is abandoned and the baseline's is sent in time, so a
  slow machine costs the demo model-written words, never a failed task.

Served as ``palaestra agent serve palaestra.demo.model_agents:scout`` (and
``builder``, ``analyst``) from the repository's root, with the key from
``PALAESTRA_AGENT_KEY``; the local model must be installed.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from starlette.types import ASGIApp

from palaestra.harness import (
    Agent,
    LocalModelChat,
    Phase,
    Reply,
    Task,
    TaskKind,
    UpstreamFailed,
)
from palaestra.protocol.output_json_schemas import BRIEF

# Also served, built on first access: scout, builder, analyst.
__all__ = ["ROLES", "with_local_model"]

log = logging.getLogger(__name__)

#: Each served name: the example module, its handler, and the phases it answers.
ROLES: Final[Mapping[str, tuple[str, str, tuple[Phase, ...]]]] = {
    "scout": ("examples.scout", "scout", (Phase.SCOUT,)),
    "builder": ("examples.builder", "build", (Phase.BUILD,)),
    "analyst": ("examples.analyst", "analyse", (Phase.VERIFY, Phase.CRITIQUE)),
}

Baseline = Callable[[Task], Any]


def with_local_model(model: LocalModelChat, baseline: Baseline) -> Callable[[Task], Any]:
    """A handler: ``model``'s answer to a dispatched task, else ``baseline``'s."""

    async def answer(task: Task) -> Reply | Any:
        if task.kind is TaskKind.SIMULATION:
            return baseline(task)
        try:
            return await model.reply(task)
        except UpstreamFailed as exc:
            log.warning("the local model gave no answer (%s): the baseline answers", exc.message)
            return baseline(task)

    return answer


def _agent(name: str) -> ASGIApp:
    module, handler, phases = ROLES[name]
    example = importlib.import_module(module)  # the demo runs from the repository's root
    model = LocalModelChat.from_env(bounds=BRIEF)
    agent = Agent(name=f"{example.MODEL_ID} + {model.model_id}", model_id=model.model_id)
    agent.handles(*phases)(with_local_model(model, getattr(example, handler)))
    agent.on_startup(model.load)  # load at start, not in the first task's time
    app: ASGIApp = agent.app()
    return app


def __getattr__(name: str) -> Any:
    """Build a model-backed agent when ``palaestra agent serve`` asks for it."""
    if name in ROLES:
        return _agent(name)
    raise AttributeError(name)
