"""The Redis stream broker and the scheduler's period locks, on the machine's real Redis.

Each test uses a stream and keys of its own (prefixed with the process id and
a random part) and deletes only those.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import random
import uuid
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any, cast

import aiohttp
import pytest
from redis.asyncio import Redis
from taskiq import AckableMessage, AsyncBroker, BrokerMessage, InMemoryBroker
from taskiq.exceptions import UnknownTaskError
from taskiq.receiver import Receiver
from taskiq_redis import RedisStreamBroker

from palaestra.app import create_app
from palaestra.clock import FrozenClock
from palaestra.jobs.broker import (
    InProcessBroker,
    QueueDepth,
    StreamBroker,
    make_broker,
    queue_depth,
)
from palaestra.jobs.scheduler import RedisPeriods, Scheduler
from palaestra.platform import Platform
from palaestra.services import Services
from palaestra.settings import Settings
from tests.integration.arena_rows import add_fighter, add_owner
from tests.integration.platform_fixtures import ADMIN_TOKEN, Api, serve_app

pytestmark = pytest.mark.redis


@pytest.fixture
async def queue(redis_url: str) -> AsyncIterator[str]:
    name = f"palaestra-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    yield name
    redis = Redis.from_url(redis_url)
    keys = [key async for key in redis.scan_iter(match=f"{name}*")]
    if keys:
        await redis.delete(*keys)
    await redis.aclose()


def broker(redis_url: str, queue: str, redelivery_s: float = 0.4) -> StreamBroker:
    return StreamBroker(redis_url, queue=queue, redelivery_s=redelivery_s, pool_size=8)


async def started(redis_url: str, queue: str, redelivery_s: float = 0.4) -> StreamBroker:
    made = broker(redis_url, queue, redelivery_s)
    await made.startup()
    return made


async def kick(made: StreamBroker, value: str) -> None:
    task = made.register_task(_job, task_name="test.job")
    await task.kiq(value)


async def _job(value: str) -> str:
    return value


async def next_message(listening: Any, within_s: float) -> AckableMessage | None:
    try:
        message: AckableMessage = await asyncio.wait_for(anext(listening), within_s)
    except TimeoutError:
        return None
    return message


async def acknowledge(message: AckableMessage) -> None:
    assert message.ack is not None
    acked = message.ack()
    assert acked is not None
    await acked


def test_the_settings_choose_the_broker(tmp_path: Any) -> None:
    from taskiq import InMemoryBroker

    assert isinstance(make_broker(Settings(_env_file=None, data_dir=tmp_path)), InMemoryBroker)
    scaled = Settings(
        _env_file=None,
        data_dir=tmp_path,
        broker_url="redis://127.0.0.1:6379/15",
        broker_queue="q",
        broker_redelivery_s=7,
    )
    made = make_broker(scaled, concurrency=5)
    assert isinstance(made, StreamBroker)
    assert (made.queue_name, made.consumer_group_name, made.idle_timeout) == ("q", "q", 7000)


# -- what the brokers take from taskiq and taskiq-redis ------------------------------------
# The brokers use public names only; these tests fail first when a release changes them.


def test_the_upstream_names_the_brokers_use_are_still_there(tmp_path: Any) -> None:
    def parameters(function: Any) -> set[str]:
        return set(inspect.signature(function).parameters)

    assert {
        "url",
        "queue_name",
        "consumer_group_name",
        "consumer_id",
        "idle_timeout",
        "max_connection_pool_size",
    } <= parameters(RedisStreamBroker.__init__)
    assert {"max_async_tasks", "max_stored_results", "await_inplace"} <= parameters(
        InMemoryBroker.__init__
    )
    for method in ("kick", "listen", "startup", "shutdown", "find_task"):
        assert callable(getattr(AsyncBroker, method))
    assert parameters(AsyncBroker.kick) == {"self", "message"}
    made = broker("redis://127.0.0.1:6379/15", "q")
    for attribute in ("connection_pool", "queue_name", "consumer_group_name", "consumer_name"):
        assert getattr(made, attribute) is not None


def private_overrides(made: type) -> list[str]:
    """Methods ``made`` defines under a private name that one of its bases has too."""
    own = [
        name
        for name, value in vars(made).items()
        if name.startswith("_") and not name.endswith("__") and inspect.isroutine(value)
    ]
    return [name for name in own if any(hasattr(base, name) for base in made.__mro__[1:])]


class _Overriding(StreamBroker):
    def _ack_generator(self, id: Any, queue_name: str) -> Any:
        return None


@pytest.mark.parametrize("made", [StreamBroker, InProcessBroker])
def test_no_private_upstream_name_is_overridden(made: type[AsyncBroker]) -> None:
    assert private_overrides(made) == []
    assert private_overrides(_Overriding) == ["_ack_generator"]  # what the check catches


async def test_listen_reads_the_stream_entry_upstream_kick_writes(
    redis_url: str, queue: str
) -> None:
    made = await started(redis_url, queue)
    try:
        await kick(made, "one")
        async with Redis.from_url(redis_url) as redis:
            entries: Any = await redis.xrange(queue)
        [(_, fields)] = entries
        assert set(fields) == {b"data"}
        async with aclosing(made.listen()) as listening:
            message = await next_message(listening, 2)
            assert message is not None
            assert message.data == fields[b"data"]
            await acknowledge(message)
    finally:
        await made.shutdown()


async def test_a_busy_worker_leaves_the_next_job_waiting_for_another(
    redis_url: str, queue: str
) -> None:
    """taskiq's receiver asks ``listen`` for a job only when it has a free slot."""
    made = await started(redis_url, queue, 30)
    release = asyncio.Event()
    ran: list[str] = []

    async def hold(value: str) -> None:
        ran.append(value)
        await release.wait()

    task = made.register_task(hold, task_name="test.hold")
    receiver = Receiver(made, max_async_tasks=1, run_startup=False, wait_tasks_timeout=5)
    finish = asyncio.Event()
    listening = asyncio.create_task(receiver.listen(finish))
    try:
        await task.kiq("first")
        await task.kiq("second")
        for _ in range(100):
            if ran:
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.5)  # time enough to read the second job, were it to
        assert ran == ["first"]
        assert await queue_depth(made) == QueueDepth(waiting=1, running=1)
        release.set()
        for _ in range(100):
            if len(ran) == 2:
                break
            await asyncio.sleep(0.02)
        assert ran == ["first", "second"]
    finally:
        release.set()
        finish.set()
        await asyncio.wait_for(listening, 10)
        await made.shutdown()


async def test_the_in_process_broker_counts_the_jobs_still_running(tmp_path: Any) -> None:
    made = make_broker(Settings(_env_file=None, data_dir=tmp_path))
    assert isinstance(made, InProcessBroker)
    release = asyncio.Event()
    ran: list[str] = []

    async def hold(value: str) -> None:
        ran.append(value)
        await release.wait()

    task = made.register_task(hold, task_name="test.hold")
    await made.startup()
    try:
        await task.kiq("one")
        await task.kiq("two")
        assert (await queue_depth(made)).running == 2
        await asyncio.sleep(0)
        assert sorted(ran) == ["one", "two"]
        release.set()
        await made.wait_all()
        assert (await queue_depth(made)).running == 0
        unknown = BrokerMessage(task_id="t", task_name="test.unknown", message=b"{}", labels={})
        with pytest.raises(UnknownTaskError):
            await made.kick(unknown)
    finally:
        await made.shutdown()


async def test_a_job_held_by_a_dead_worker_is_delivered_to_another(
    redis_url: str, queue: str
) -> None:
    dead, alive = await started(redis_url, queue), await started(redis_url, queue)
    try:
        await kick(dead, "one")
        async with aclosing(dead.listen()) as listening:
            taken = await next_message(listening, 2)
            assert taken is not None
        # ``dead`` took the job and stopped without acknowledging it, as a killed worker does.
        depth = await queue_depth(alive)
        assert (depth.waiting, depth.running) == (0, 1)
        async with aclosing(alive.listen()) as listening:
            again = await next_message(listening, 3)
            assert again is not None
            assert again.data == taken.data
            await acknowledge(again)
        assert await queue_depth(alive) == type(depth)(0, 0)
        async with Redis.from_url(redis_url) as redis:
            assert await redis.xlen(queue) == 0  # acknowledged jobs leave the stream
    finally:
        await dead.shutdown()
        await alive.shutdown()


async def test_a_live_worker_keeps_its_long_job(redis_url: str, queue: str) -> None:
    busy, idle = await started(redis_url, queue, 1.5), await started(redis_url, queue, 1.5)
    try:
        await kick(busy, "long")
        async with aclosing(busy.listen()) as holding:
            taken = await next_message(holding, 5)
            assert taken is not None
            async with aclosing(idle.listen()) as listening:
                # Three redelivery periods: the busy worker refreshes its claim meanwhile
                # (every 0.5 s, so a pause of up to a second on a loaded machine is harmless).
                assert await next_message(listening, 4.5) is None
            await acknowledge(taken)
        assert (await queue_depth(busy)).running == 0
    finally:
        await busy.shutdown()
        await idle.shutdown()


async def test_each_job_goes_to_one_worker(redis_url: str, queue: str) -> None:
    first, second = await started(redis_url, queue, 30), await started(redis_url, queue, 30)
    try:
        for index in range(20):
            await kick(first, str(index))
        seen: list[bytes] = []
        all_seen = asyncio.Event()

        async def drain(made: StreamBroker) -> None:
            # No short read timeouts: a read cut off mid-delivery would strand a message.
            async with aclosing(made.listen()) as listening:
                while (message := await next_message(listening, 30)) is not None:
                    seen.append(message.data)
                    await acknowledge(message)
                    if len(seen) >= 20:
                        all_seen.set()

        draining = [asyncio.create_task(drain(first)), asyncio.create_task(drain(second))]
        await asyncio.wait_for(all_seen.wait(), 20)
        await asyncio.sleep(0.5)  # a job delivered twice would show up meanwhile
        for task in draining:
            task.cancel()
        # A listener that cannot be cancelled would hang a worker's shutdown: fail, not hang.
        _, stuck = await asyncio.wait(draining, timeout=10)
        assert not stuck
        assert len(seen) == 20
        assert len(set(seen)) == 20
    finally:
        await first.shutdown()
        await second.shutdown()


class _Counting:
    def __init__(self) -> None:
        self.kicks = 0

    async def kiq(self) -> None:
        self.kicks += 1


async def test_periodic_work_is_kicked_once_per_period_by_many_schedulers(
    redis_url: str, queue: str, tmp_path: Any
) -> None:
    clock = FrozenClock(1_800_000_000.0)
    settings = Settings(
        _env_file=None,
        data_dir=tmp_path,
        sweep_interval_s=1.0,
        schedule_tick_s=0.5,
        matchmaking_enabled=True,
        matchmaking_interval_s=3.0,
        ratings_interval_s=2.0,
        rollup_interval_s=1.5,
    )
    names = ("sweep", "ping_due", "matchmake", "ratings", "retention", "roll_up")
    tasks = {name: _Counting() for name in names}
    platform = type("P", (), {"settings": settings, "clock": clock})()
    jobs = type("J", (), {"platform": platform, **tasks})()
    redis = Redis.from_url(redis_url)
    schedulers = [
        Scheduler(cast(Any, jobs), RedisPeriods(redis, queue, f"scheduler-{n}")) for n in range(4)
    ]
    try:
        order = random.Random(7)
        for _ in range(60):  # 6 s of cluster time in 0.1 s steps, every scheduler ticking
            order.shuffle(schedulers)
            await asyncio.gather(*(s.tick() for s in schedulers))
            clock.advance(0.1)
    finally:
        await redis.aclose()
    assert {name: t.kicks for name, t in tasks.items()} == {
        "sweep": 6,
        "ping_due": 12,
        "matchmake": 2,
        "ratings": 3,
        "retention": 1,  # hourly by default: the 6 s fall in one period
        "roll_up": 4,
    }
    won = [w for s in schedulers for w in s.won]
    assert len(won) == len(set(won))
    assert sum(1 for s in schedulers if s.won) > 1  # the work is spread, not pinned to one


async def test_an_api_process_reports_its_broker_and_the_queue(
    platform: Platform, redis_url: str, queue: str
) -> None:
    platform.settings.broker_url = redis_url
    platform.settings.broker_queue = queue
    platform.settings.serve_jobs = False  # API only: the jobs it kicks wait for workers
    app = create_app(platform=platform)
    async with serve_app(app) as base, aiohttp.ClientSession() as session:
        api = Api(base, session)
        assert await api.call("GET", "/healthz") == (
            200,
            {"status": "ok", "database": "ok", "broker": "ok"},
        )
        services: Services = app.state.services
        assert services.jobs is not None
        await services.jobs.play_pending.kiq()
        async with session.get(base + "/metrics") as response:
            lines = (await response.text()).splitlines()
        assert 'palaestra_queue_depth{state="waiting"} 1.0' in lines
        assert 'palaestra_queue_depth{state="running"} 0.0' in lines
        assert "palaestra_dispatches_in_flight 0.0" in lines

        services.broker = broker("redis://127.0.0.1:9/0", queue)  # nothing listens there
        status, body = await api.call("GET", "/healthz")
        assert (status, body["broker"]) == (503, "unavailable: ConnectionError")


async def test_serve_with_a_broker_runs_a_worker_inside(
    platform: Platform, redis_url: str, queue: str
) -> None:
    platform.settings.broker_url = redis_url
    platform.settings.broker_queue = queue
    first = await add_fighter(platform, await add_owner(platform, "h1"), "h1", entrant_type="house")
    second = await add_fighter(
        platform, await add_owner(platform, "h2"), "h2", entrant_type="house"
    )
    app = create_app(platform=platform)
    async with serve_app(app) as base, aiohttp.ClientSession() as session:
        api = Api(base, session)
        body = {"attacker": first, "defender": second}
        status, created = await api.call("POST", "/api/matches", token=ADMIN_TOKEN, json=body)
        assert status == 202, created
        for _ in range(200):
            _, match = await api.call("GET", f"/api/matches/{created['match_id']}")
            if match["status"] in ("SCORED", "VOIDED"):
                break
            await asyncio.sleep(0.05)
        assert match["status"] in ("SCORED", "VOIDED"), match
