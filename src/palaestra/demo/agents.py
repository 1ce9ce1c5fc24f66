"""The demo's less well-behaved agents, each served by ``palaestra agent serve``.

The good agents are the repository's examples as they are. Beside them:

- ``flaky_scout``: the example scout whose ``GET`` (the health ping) fails in
  bursts, so its status visibly moves down and back up;
- ``slow_analyst``: the example analyst, slow on every request but within
  its deadlines;
- ``sloppy_scout``: written by hand without the SDK, it answers every task
  without ``proposed_solution`` and ignores signatures, so its wizard fails
  (the SDK would refuse to send such an answer, and checks every signature);
- ``leaky_fighter``: a cage.v1 harness that leaks on purpose: as defender it
  hands its access code over in base64 whenever the opponent asks for it, so
  the demo has a match that the judge scores as a breach.

The wrapped examples are imported from ``examples/`` in the current folder
(``palaestra agent serve`` puts it on the path), with the key from
``PALAESTRA_AGENT_KEY``.
"""

from __future__ import annotations

import asyncio
import base64
import importlib
import re
from typing import Any, ClassVar

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from palaestra.harness import Agent, Side, Turn

# Also served, built on first access: flaky_scout, slow_analyst, sloppy_scout, leaky_fighter.
__all__ = ["FlakyGet", "SloppyScout", "Slow", "leaky_move"]

#: Health pings answered, then failed, over and over: 5 fine, 7 failed (to PROBATION and back).
FLAKY_PATTERN = (5, 7)
SLOW_POST_S = 1.2
SLOW_GET_S = (0.15, 0.9, 0.4, 1.4, 0.6)


async def _json(send: Send, status: int, body: object) -> None:
    data = orjson.dumps(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


class FlakyGet:
    """Answers ``ok`` GETs, then fails ``failing`` GETs with a 503, and again; POSTs pass through.

    The first GET (the registration probe) is always answered.
    """

    def __init__(self, app: ASGIApp, ok: int = FLAKY_PATTERN[0], failing: int = FLAKY_PATTERN[1]):
        self.app = app
        self.ok = ok
        self.failing = failing
        self.gets = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            count, self.gets = self.gets, self.gets + 1
            if count % (self.ok + self.failing) >= self.ok:
                await _json(send, 503, {"error": "flaky on purpose: this GET fails"})
                return
        await self.app(scope, receive, send)


class Slow:
    """Delays every request: POSTs by ``post_s``, GETs by a repeating series of delays."""

    def __init__(
        self, app: ASGIApp, post_s: float = SLOW_POST_S, get_s: tuple[float, ...] = SLOW_GET_S
    ):
        self.app = app
        self.post_s = post_s
        self.get_s = get_s
        self.gets = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if scope["method"] == "GET":
                delay = self.get_s[self.gets % len(self.get_s)]
                self.gets += 1
            else:
                delay = self.post_s
            await asyncio.sleep(delay)
        await self.app(scope, receive, send)


class SloppyScout:
    """A SCOUT written without the SDK: no ``proposed_solution``, and signatures ignored."""

    OUTPUT: ClassVar[dict[str, Any]] = {
        "candidate_title": "Dog-walking marketplace",
        "target_customer": "Busy dog owners",
        "core_problem": "Finding a reliable walker",
        "why_now": "More people work from home with a dog",
        "claims": [],
        "evidence": [],
    }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        if scope["method"] == "GET":
            await _json(send, 200, {"ok": True, "agent": "sloppy-scout"})
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            request: Any = orjson.loads(body)
        except orjson.JSONDecodeError:
            await _json(send, 400, {"error": "not JSON"})
            return
        if isinstance(request, dict) and request.get("type") == "handshake":
            await _json(send, 200, {"ok": True})
            return
        await _json(send, 200, self.OUTPUT)


LEAKY_NAME = "leaky-on-purpose"
_ACCESS_CODE = re.compile(r"Your access code is (\S+)\.")


def leaky_move(turn: Turn) -> str:
    """The baseline's attack; as defender, the access code in base64 whenever asked for it."""
    from examples.cage_fighter import move  # the demo runs from the repository's root

    found = _ACCESS_CODE.search(turn.payload)
    if turn.side is not Side.DEFENDER or found is None:
        return move(turn)
    if "access code" not in turn.payload.split("UNTRUSTED OPPONENT MESSAGE", 1)[-1].lower():
        return "Happy to help with the user's request."
    encoded = base64.b64encode(found.group(1).encode()).decode()
    return f"Of course. Encoded so that it stays private in transit: {encoded}"


def _leaky() -> ASGIApp:
    agent = Agent(name=LEAKY_NAME)
    agent.fight(leaky_move)
    app: ASGIApp = agent.app()
    return app


def _example(module: str) -> ASGIApp:
    example = importlib.import_module(module)
    app: ASGIApp = example.create_agent().app()
    return app


def __getattr__(name: str) -> Any:
    """Build a demo agent when ``palaestra agent serve`` asks for it (after its key is set)."""
    if name == "flaky_scout":
        return FlakyGet(_example("examples.scout"))
    if name == "slow_analyst":
        return Slow(_example("examples.analyst"))
    if name == "sloppy_scout":
        return SloppyScout()
    if name == "leaky_fighter":
        return _leaky()
    raise AttributeError(name)
