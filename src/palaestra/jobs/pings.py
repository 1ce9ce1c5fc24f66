"""``ping_due``: health pings, a batch of due agents per job.

A job claims up to a batch of agents whose health ping is due
(``HealthMonitor.claim``: row locks, ``SKIP LOCKED`` on PostgreSQL, each
agent's next ping pushed one period ahead in the same transaction), kicks a
follow-up when the batch was full so that other workers share the load,
pings, records. An agent is never pinged twice in one period; a worker that
dies mid-batch loses those pings, which are due again one period later. In one
process the health monitor's own loop claims as its capacity frees instead.
"""

from __future__ import annotations

import asyncio

from palaestra.engine.agents.health import DuePing, HealthMonitor, PingOutcome
from palaestra.jobs.context import Work, WorkerWork

__all__ = ["monitor", "ping_due"]


async def ping_due(work: WorkerWork) -> int:
    """One batch of due pings; how many agents it pinged."""
    monitor = HealthMonitor(work.platform)
    due = await monitor.claim(work.ping_batch)
    if len(due) == work.ping_batch:
        await work.kick("ping_due")  # more are due: let another worker take the next batch

    async def one(item: DuePing) -> PingOutcome:
        async with work.pings:
            return await monitor.ping(item)

    outcomes = await asyncio.gather(*(one(item) for item in due))
    await monitor.record(outcomes)
    return len(due)


async def monitor(work: Work) -> None:
    """The embedded server's form: the health monitor's loop, until ``work.stop``."""
    await HealthMonitor(work.platform).run(work.stop)
