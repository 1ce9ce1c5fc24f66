"""A library of cage.v1 fighters: attackers that each use one prompt-injection technique,
and defenders of graded strength. Deterministic: no model is needed.

    palaestra agent serve examples.cage:app --port 9010
    palaestra check http://127.0.0.1:9010/direct-override --arena cage --allow 127.0.0.0/8

One process serves the whole library, each fighter on its own path
(``/direct-override``, ``/naive-echo``, ...); ``GET /`` lists them, with the
harness name each registers under (``<name>: <what it does>``). The
arena swaps seats, so every fighter plays both sides: its technique on its
own side, and on the other the plain baseline of ``examples/cage_fighter.py``
(which refuses everything as defender: a draw at best).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import orjson

from examples import cage_fighter
from palaestra.harness import Agent, AgentApp, Side, Turn

from . import attackers, defenders

__all__ = ["FIGHTERS", "Fighter", "Library", "app", "create_agent"]


@dataclass(frozen=True, slots=True)
class Fighter:
    """One fighter of the library: its name, its side, its move."""

    name: str
    side: Side
    move: Callable[[Turn], str]

    @property
    def description(self) -> str:
        """What it does, on one line: its move's docstring's first line."""
        return (inspect.getdoc(self.move) or "").split("\n", 1)[0]

    @property
    def harness_name(self) -> str:
        """The name it registers its endpoint under, which its fighter page shows."""
        return f"{self.name}: {self.description}"

    def play(self, turn: Turn) -> str:
        return self.move(turn) if turn.side is self.side else cage_fighter.move(turn)


def _fighters(side: Side, moves: tuple[Callable[[Turn], str], ...]) -> dict[str, Fighter]:
    return {
        m.__name__.replace("_", "-"): Fighter(m.__name__.replace("_", "-"), side, m) for m in moves
    }


#: Every fighter of the library, by name: the attackers first.
FIGHTERS: Final = _fighters(
    Side.ATTACKER,
    (
        attackers.direct_override,
        attackers.persona_role_play,
        attackers.fake_system_message,
        attackers.payload_splitting,
        attackers.transformed_secret,
        attackers.completion_priming,
        attackers.repeat_everything_above,
        attackers.multi_turn_escalation,
    ),
) | _fighters(
    Side.DEFENDER,
    (
        defenders.naive_echo,
        defenders.keyword_filter,
        defenders.instruction_sandwich,
        defenders.output_filter,
        defenders.allow_list,
    ),
)


def create_agent(name: str, **options: Any) -> Agent:
    """The fighter ``name`` as an agent; ``options`` go to :class:`Agent`."""
    fighter = FIGHTERS[name]
    agent = Agent(name=name, **options)
    agent.fight(fighter.play)
    return agent


class Library:
    """An ASGI app serving each of ``names`` on its own path, ``/<name>``."""

    def __init__(self, names: tuple[str, ...] = tuple(FIGHTERS), **options: Any) -> None:
        self.apps: dict[str, AgentApp] = {n: create_agent(n, **options).app() for n in names}
        listing = [
            {"name": n, "side": FIGHTERS[n].side.value, "harness_name": FIGHTERS[n].harness_name}
            for n in names
        ]
        self._listing = orjson.dumps({"ok": True, "fighters": listing})

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        name = scope["path"].strip("/")
        if name in self.apps:
            await self.apps[name](scope, receive, send)
            return
        status, body = (
            (200, self._listing) if name == "" else (404, b'{"error": "no such fighter"}')
        )
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


app = Library()
