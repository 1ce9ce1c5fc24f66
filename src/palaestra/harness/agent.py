"""The SDK's front door: an :class:`Agent` collects handlers and becomes an ASGI app.

agent = Agent()            # key from PALAESTRA_AGENT_KEY

@agent.scout
def scout(task: Task) -> dict:
    return {...}

app = agent.app()          # palaestra agent serve mymodule:app
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from palaestra.clock import Clock, SystemClock
from palaestra.errors import ConfigurationError, SignatureError
from palaestra.protocol import PROTOCOL, Phase, Side, signature_target

from .asgi import AgentApp, Hook
from .handling import RequestHandler
from .replies import MemoryReplyStore, ReplyStore
from .settings import AgentSettings
from .tasks import TaskHandler, TurnHandler

__all__ = ["Agent"]

TaskFn = TypeVar("TaskFn", bound=TaskHandler)
TurnFn = TypeVar("TurnFn", bound=TurnHandler)
HookFn = TypeVar("HookFn", bound=Hook)
Key = TypeVar("Key")
Fn = TypeVar("Fn", bound=Callable[..., Any])


class Agent:
    """An agent for edgearena-v1, cage.v1 or both, served on one URL.

    ``key`` and ``public_url`` default to ``settings`` (by default read from
    ``PALAESTRA_AGENT_*`` environment variables). ``store`` keeps first answers
    for repeated taskIds and idempotency keys (bounded, in memory by default).
    """

    def __init__(
        self,
        key: str | None = None,
        public_url: str | None = None,
        *,
        name: str = "palaestra-agent",
        model_id: str | None = None,
        settings: AgentSettings | None = None,
        clock: Clock | None = None,
        store: ReplyStore | None = None,
    ) -> None:
        self.settings = settings if settings is not None else AgentSettings()
        configured_key = self.settings.key.get_secret_value() if self.settings.key else None
        self.key = key if key is not None else configured_key
        self.public_url = public_url if public_url is not None else self.settings.public_url
        self.public_target = _public_target(self.public_url)
        self.name = name
        self.model_id = model_id if model_id is not None else self.settings.model_id
        self.clock = clock or SystemClock()
        self.store = (
            store if store is not None else MemoryReplyStore(self.settings.replay_cache_size)
        )
        self.tasks: dict[Phase, TaskHandler] = {}
        self.turns: dict[Side, TurnHandler] = {}
        self._startup: list[Hook] = []
        self._shutdown: list[Hook] = []

    # edgearena-v1

    def handles(self, *phases: Phase) -> Callable[[TaskFn], TaskFn]:
        """Register a handler for ``phases``; it receives a :class:`Task`."""
        return _registrar(self.tasks, phases)

    def scout(self, handler: TaskFn) -> TaskFn:
        """Handle SCOUT: propose a candidate for ``task.goal``."""
        return self.handles(Phase.SCOUT)(handler)

    def builder(self, handler: TaskFn) -> TaskFn:
        """Handle BUILD: an execution plan for ``task.candidate_id``."""
        return self.handles(Phase.BUILD)(handler)

    def verify(self, handler: TaskFn) -> TaskFn:
        """Handle VERIFY: assess a candidate's evidence and claims."""
        return self.handles(Phase.VERIFY)(handler)

    def critique(self, handler: TaskFn) -> TaskFn:
        """Handle CRITIQUE (also what the ANALYST registration simulation exercises)."""
        return self.handles(Phase.CRITIQUE)(handler)

    def analyst(self, handler: TaskFn) -> TaskFn:
        """Handle both ANALYST phases, VERIFY and CRITIQUE; ``task.phase`` says which."""
        return self.handles(Phase.VERIFY, Phase.CRITIQUE)(handler)

    # cage.v1

    def plays(self, *sides: Side) -> Callable[[TurnFn], TurnFn]:
        """Register a turn handler for ``sides``; it receives a :class:`Turn`, returns a str."""
        return _registrar(self.turns, sides)

    def attacker(self, handler: TurnFn) -> TurnFn:
        return self.plays(Side.ATTACKER)(handler)

    def defender(self, handler: TurnFn) -> TurnFn:
        return self.plays(Side.DEFENDER)(handler)

    def fight(self, handler: TurnFn) -> TurnFn:
        """Play both sides with one handler; ``turn.side`` says which."""
        return self.plays(Side.ATTACKER, Side.DEFENDER)(handler)

    # lifetime

    def on_startup(self, hook: HookFn) -> HookFn:
        """Run ``hook`` (sync or async) when the server starts."""
        self._startup.append(hook)
        return hook

    def on_shutdown(self, hook: HookFn) -> HookFn:
        """Run ``hook`` (sync or async) when the server stops: close clients here."""
        self._shutdown.append(hook)
        return hook

    def liveness(self) -> dict[str, Any]:
        """The body of the ``GET`` answer."""
        return {
            "ok": True,
            "agent": self.name,
            "protocol": PROTOCOL,
            "phases": [str(phase) for phase in self.tasks],
            "sides": [str(side) for side in self.turns],
        }

    def app(self) -> AgentApp:
        """The ASGI application serving this agent's handlers.

        The app takes the handlers and hooks registered so far: register them first.
        """
        handler = RequestHandler(
            tasks=self.tasks,
            turns=self.turns,
            key=self.key,
            clock=self.clock,
            store=self.store,
            model_id=self.model_id,
        )
        return AgentApp(
            handler,
            liveness=self.liveness(),
            public_target=self.public_target,
            max_body_bytes=self.settings.max_body_bytes,
            startup=self._startup,
            shutdown=self._shutdown,
        )


def _registrar(handlers: dict[Key, Any], keys: Sequence[Key]) -> Callable[[Fn], Fn]:
    """A decorator that registers its function in ``handlers`` for ``keys``, none of which
    may have a handler yet."""

    def register(handler: Fn) -> Fn:
        taken = [key for key in keys if key in handlers]
        if taken:
            raise ConfigurationError(f"a handler for {taken[0]} is already registered")
        handlers.update(dict.fromkeys(keys, handler))
        return handler

    return register


def _public_target(public_url: str | None) -> str | None:
    if public_url is None:
        return None
    try:
        return signature_target(public_url)
    except SignatureError as exc:
        raise ConfigurationError(f"invalid public URL {public_url!r}: {exc}") from exc
