"""The job broker, made from the settings: in memory for one process, Redis streams to scale out.

With ``broker_url`` unset the broker is :class:`InProcessBroker`, taskiq's
:class:`InMemoryBroker` counting the jobs it runs: a job kicked is run at once
as a task of the same event loop (tests, and one process that wants the job
path). With ``redis://...`` it is :class:`StreamBroker`, taskiq-redis's
``RedisStreamBroker`` (a stream and a consumer group: a job stays pending until
the worker that runs it acknowledges it, after it ran) with three changes:

- a worker reads one job at a time and only when it has room to run it
  (``XREADGROUP COUNT 1``, asked by taskiq's receiver only when a slot is
  free), so no job waits in a busy worker while another is idle;
- jobs left unacknowledged by a dead worker are claimed (``XAUTOCLAIM``)
  after ``broker_redelivery_s`` whether or not new jobs arrive (upstream
  claims only after a read that returned something), and a live worker
  refreshes the claim on the jobs it holds (``XCLAIM ... JUSTID``), so a long
  job is never taken for an abandoned one;
- an acknowledged job is deleted from the stream, so the stream holds only
  the jobs waiting or running: its length is the queue's depth, and it does
  not grow without end.

A job may still run twice (its worker died after the work, before the
acknowledgement): every job is an idempotent step and the database decides.

**Public API only, and a version range.** Both brokers use only the
libraries' public names: :class:`StreamBroker` replaces ``listen`` (the
method every broker implements) and makes its own acknowledgements, reading
the attributes its documented constructor parameters set; the in-process
broker keeps its own set of running jobs rather than reading
``InMemoryBroker._running_tasks``, kicking each through the documented
``await_inplace`` mode inside a task of its own. No private method is
overridden, so a release that renames one cannot break these silently. What
no public API states is kept under test instead: the stream entry upstream's
``kick`` writes (one ``data`` field) is what ``listen`` reads, and taskiq's
receiver pulls from ``listen`` only when it has a free slot. Both are
behaviours of the taskiq and taskiq-redis versions tested, so
``pyproject.toml`` bounds both to those series, and
``tests/integration/test_jobs_broker.py`` checks the names used
(``inspect.signature``), that no private upstream name is overridden, and
the behaviours, against real Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog
from redis.asyncio import Redis
from taskiq import AckableMessage, AsyncBroker, BrokerMessage, InMemoryBroker
from taskiq.exceptions import UnknownTaskError
from taskiq_redis import RedisStreamBroker

from palaestra.settings import Settings

__all__ = [
    "Flags",
    "InProcessBroker",
    "QueueDepth",
    "StreamBroker",
    "flags_for",
    "make_broker",
    "queue_depth",
]

log = structlog.get_logger(__name__)

#: Abandoned jobs claimed at once: held (and kept fresh) until this worker has room.
_CLAIM_BATCH = 10


@dataclass(frozen=True, slots=True)
class QueueDepth:
    waiting: int  # kicked, not yet taken by a worker
    running: int  # taken by a worker, not yet acknowledged


class StreamBroker(RedisStreamBroker):
    """``RedisStreamBroker`` with fair fetching, idle-proof redelivery and live-job refresh."""

    def __init__(self, url: str, *, queue: str, redelivery_s: float, pool_size: int) -> None:
        redelivery_ms = max(1, round(redelivery_s * 1000))
        super().__init__(
            url,
            queue_name=queue,
            consumer_group_name=queue,
            consumer_id="0",  # a group made after jobs were kicked still gets them
            idle_timeout=redelivery_ms,
            max_connection_pool_size=pool_size,
        )
        self.redelivery_s = redelivery_s
        #: How long one read waits for a new job: short enough to claim abandoned ones on time.
        self.read_block_ms = max(50, min(2000, redelivery_ms // 2))
        #: Jobs delivered to this consumer and not yet acknowledged (stream ids).
        self.holding: set[Any] = set()

    def _acknowledger(self, msg_id: Any) -> Callable[[], Awaitable[None]]:
        async def ack() -> None:
            async with Redis(connection_pool=self.connection_pool) as redis:
                pipe = redis.pipeline(transaction=True)
                pipe.xack(self.queue_name, self.consumer_group_name, msg_id)
                pipe.xdel(self.queue_name, msg_id)
                await pipe.execute()
            self.holding.discard(msg_id)

        return ack

    def _message(self, msg_id: Any, fields: Any) -> AckableMessage:
        self.holding.add(msg_id)
        return AckableMessage(data=fields[b"data"], ack=self._acknowledger(msg_id))

    async def listen(self) -> AsyncGenerator[AckableMessage, None]:
        refresher = asyncio.create_task(self._refresh_held())
        loop = asyncio.get_running_loop()
        claimed: deque[AckableMessage] = deque()
        cursor: bytes | str = "0-0"
        next_pass = 0.0
        try:
            async with Redis(connection_pool=self.connection_pool) as redis:
                while True:
                    if claimed:
                        yield claimed.popleft()
                        continue
                    if loop.time() >= next_pass:
                        # One step through the pending list; a full pass every redelivery / 4.
                        cursor, found, *_ = await redis.xautoclaim(
                            self.queue_name,
                            self.consumer_group_name,
                            self.consumer_name,
                            min_idle_time=self.idle_timeout,
                            start_id=cursor,
                            count=_CLAIM_BATCH,
                        )
                        if cursor in (b"0-0", "0-0"):
                            next_pass = loop.time() + self.redelivery_s / 4
                        for msg_id, fields in found:
                            if fields:  # None: the entry was deleted meanwhile
                                log.info("job redelivered", id=msg_id.decode())
                                claimed.append(self._message(msg_id, fields))
                        if claimed or cursor not in (b"0-0", "0-0"):
                            continue
                    fetched: Any = await redis.xreadgroup(
                        self.consumer_group_name,
                        self.consumer_name,
                        {self.queue_name: ">"},
                        block=self.read_block_ms,
                        count=1,
                    )
                    for _stream, messages in fetched or []:
                        for msg_id, fields in messages:
                            yield self._message(msg_id, fields)
        finally:
            refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await refresher

    async def _refresh_held(self) -> None:
        """Reset the idle time of the jobs this worker holds, so none is redelivered."""
        while True:
            await asyncio.sleep(self.redelivery_s / 3)
            held: list[Any] = list(self.holding)
            if not held:
                continue
            try:
                async with Redis(connection_pool=self.connection_pool) as redis:
                    await redis.xclaim(
                        self.queue_name,
                        self.consumer_group_name,
                        self.consumer_name,
                        min_idle_time=0,
                        message_ids=held,
                        justid=True,
                    )
            except Exception:
                log.exception("refreshing held jobs failed")

    async def depth(self) -> QueueDepth:
        async with Redis(connection_pool=self.connection_pool) as redis:
            length = await redis.xlen(self.queue_name)
            try:
                pending = await redis.xpending(self.queue_name, self.consumer_group_name)
                running = int(pending["pending"])
            except Exception:  # no group yet: nobody has listened
                running = 0
        return QueueDepth(waiting=max(0, length - running), running=running)

    async def ping(self) -> None:
        async with Redis(connection_pool=self.connection_pool) as redis:
            await redis.ping()

    def redis(self) -> Redis:
        """A client on the broker's pool (the scheduler's period locks use it)."""
        return Redis(connection_pool=self.connection_pool)


class InProcessBroker(InMemoryBroker):
    """taskiq's ``InMemoryBroker`` that knows which of the jobs it kicked are still running."""

    def __init__(self, *, max_async_tasks: int) -> None:
        super().__init__(max_async_tasks=max_async_tasks, max_stored_results=1, await_inplace=True)
        #: One task per job kicked and not yet finished.
        self.running: set[asyncio.Task[None]] = set()

    async def kick(self, message: BrokerMessage) -> None:
        """Start the job as a task of this event loop and return at once."""
        if self.find_task(message.task_name) is None:
            raise UnknownTaskError(task_name=message.task_name)
        # ``await_inplace``: the inherited kick runs the job to its end, inside this task.
        task = asyncio.create_task(super().kick(message))
        self.running.add(task)
        task.add_done_callback(self.running.discard)

    async def wait_all(self) -> None:
        """Until no job runs, those kicked meanwhile included."""
        while self.running:
            await asyncio.wait(list(self.running))


def make_broker(settings: Settings, *, concurrency: int | None = None) -> AsyncBroker:
    """The broker ``settings`` ask for: Redis streams with ``broker_url``, else in memory."""
    concurrency = concurrency or settings.worker_concurrency
    if not settings.broker_url:
        return InProcessBroker(max_async_tasks=concurrency)
    return StreamBroker(
        settings.broker_url,
        queue=settings.broker_queue,
        redelivery_s=settings.broker_redelivery_s,
        pool_size=concurrency + 16,
    )


async def queue_depth(broker: AsyncBroker) -> QueueDepth:
    """Jobs waiting and running (in memory: the jobs of this process still running)."""
    if isinstance(broker, StreamBroker):
        return await broker.depth()
    if isinstance(broker, InProcessBroker):
        return QueueDepth(waiting=0, running=len(broker.running))
    return QueueDepth(0, 0)


class Flags:
    """Markers that expire: ``raise_`` is true for the first caller until ``lower`` (or expiry).

    In Redis (``SET NX PX``) when the broker is Redis, so that they hold across the
    cluster; else in this process.
    """

    def __init__(self, redis: Redis | None, prefix: str, ttl_s: float) -> None:
        self.redis = redis
        self.prefix = prefix
        self.ttl_ms = max(1, round(ttl_s * 1000))
        self._local: set[str] = set()

    async def raise_(self, name: str) -> bool:
        if self.redis is None:
            if name in self._local:
                return False
            self._local.add(name)
            return True
        key = f"{self.prefix}:flag:{name}"
        return bool(await self.redis.set(key, 1, nx=True, px=self.ttl_ms))

    async def lower(self, name: str) -> None:
        if self.redis is None:
            self._local.discard(name)
        else:
            await self.redis.delete(f"{self.prefix}:flag:{name}")


def flags_for(broker: AsyncBroker, settings: Settings) -> Flags:
    redis = broker.redis() if isinstance(broker, StreamBroker) else None
    return Flags(redis, settings.broker_queue, max(5.0, settings.broker_redelivery_s))
