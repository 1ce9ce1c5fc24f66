"""``InTurn``: a burst of requests under its prefix is handled a few at a time, in order of
arrival; requests elsewhere (an agent's completion, a health probe) never wait behind it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from palaestra.api import routes_runs
from palaestra.api.limits import InTurn
from palaestra.app import create_app
from palaestra.settings import Settings


class Held:
    """An application that holds every request until released, noting who is inside."""

    def __init__(self) -> None:
        self.inside: list[str] = []
        self.most = 0
        self.entered: list[str] = []
        self.release = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        name = scope["path"]
        self.inside.append(name)
        self.entered.append(name)
        self.most = max(self.most, len(self.inside))
        await self.release.wait()
        self.inside.remove(name)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})


async def call(app: Any, path: str) -> int:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path, "headers": []}
    await app(scope, receive, send)
    return int(sent[0]["status"])


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_a_burst_is_handled_a_few_at_a_time_in_order_of_arrival() -> None:
    inner = Held()
    app = InTurn(inner, prefix="/api/runs", limit=2)
    burst = [asyncio.create_task(call(app, f"/api/runs/{n}")) for n in range(5)]
    await settle()
    assert inner.inside == ["/api/runs/0", "/api/runs/1"]
    inner.release.set()
    assert await asyncio.gather(*burst) == [200] * 5
    assert inner.most == 2
    assert inner.entered == [f"/api/runs/{n}" for n in range(5)]


@pytest.mark.asyncio
async def test_requests_elsewhere_never_wait_behind_a_burst() -> None:
    inner = Held()
    app = InTurn(inner, prefix="/api/runs", limit=1)
    burst = [asyncio.create_task(call(app, "/api/runs")) for _ in range(3)]
    others = [
        asyncio.create_task(call(app, path))
        for path in ("/api/agent-tasks/t/complete", "/healthz", "/metrics")
    ]
    await settle()
    assert sorted(inner.inside) == sorted(
        ["/api/runs", "/api/agent-tasks/t/complete", "/healthz", "/metrics"]
    )
    inner.release.set()
    assert await asyncio.gather(*burst, *others) == [200] * 6


@pytest.mark.asyncio
async def test_a_request_that_gives_up_waiting_leaves_its_turn_to_the_next() -> None:
    inner = Held()
    app = InTurn(inner, prefix="/api/runs", limit=1)
    first = asyncio.create_task(call(app, "/api/runs/first"))
    gone = asyncio.create_task(call(app, "/api/runs/gone"))
    last = asyncio.create_task(call(app, "/api/runs/last"))
    await settle()
    gone.cancel()  # its client disconnected while it waited
    inner.release.set()
    assert await first == 200
    assert await last == 200
    assert inner.entered == ["/api/runs/first", "/api/runs/last"]


def test_the_app_takes_the_runs_api_in_turns_of_its_setting(tmp_path: Any) -> None:
    settings = Settings(data_dir=tmp_path, runs_api_concurrency=7)
    app = create_app(settings)
    [turns] = [m for m in app.user_middleware if m.cls == InTurn]  # type: ignore[comparison-overlap]
    assert turns.kwargs == {"prefix": routes_runs.PREFIX, "limit": 7}
    paths = [getattr(route, "path", "") for route in routes_runs.router.routes]
    assert len(paths) == 4
    assert all(path.startswith(routes_runs.PREFIX) for path in paths)
