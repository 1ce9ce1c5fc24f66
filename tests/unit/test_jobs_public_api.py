"""The jobs package: its exported names, and its in-process period locks and flags."""

from __future__ import annotations

import importlib

import pytest

from palaestra.jobs.broker import Flags
from palaestra.jobs.scheduler import LocalPeriods

EXPORTED = {
    "broker": [
        "Flags",
        "InProcessBroker",
        "QueueDepth",
        "StreamBroker",
        "flags_for",
        "make_broker",
        "queue_depth",
    ],
    "tasks": ["PING_BATCH", "Jobs"],
    "scheduler": [
        "LocalPeriods",
        "Periodic",
        "Periods",
        "RedisPeriods",
        "Scheduler",
        "periods_for",
    ],
    "sweeper": ["due_runs", "orphaned_matches", "pending_matches", "sweep"],
    "runs": ["STEP_FLAG", "QueuedRuns"],
    "kicks": ["Kicks"],
    "worker": ["Worker", "consuming", "run_worker"],
    "serving": ["PendingKicker", "through_broker"],
    "registry": ["JOBS", "Job", "job", "periodic"],
    "context": ["EmbeddedWork", "LocalKicks", "Work", "WorkerWork"],
    "embedded": ["embedded_loops", "embedded_supervisor"],
    "supervisor": ["BACKOFF_S", "MAX_BACKOFF_S", "Loop", "Supervisor"],
    "pings": ["monitor", "ping_due"],
    "turns": ["play_pending", "play_turn", "referee"],
    "stepping": ["drive_runs", "step_runs"],
    "matchmaking": ["matchmake"],
    "upkeep": ["ratings", "retention", "roll_up"],
}


@pytest.mark.parametrize("name", sorted(EXPORTED))
def test_each_module_exports_what_it_means_to(name: str) -> None:
    module = importlib.import_module(f"palaestra.jobs.{name}")
    assert sorted(module.__all__) == sorted(EXPORTED[name])
    assert all(hasattr(module, exported) for exported in module.__all__)


async def test_a_period_is_taken_once_and_never_again_after_a_later_one() -> None:
    periods = LocalPeriods()
    assert await periods.take("pings", 5, 1.0)
    assert not await periods.take("pings", 5, 1.0)
    assert await periods.take("sweep", 5, 1.0)  # each job has its own periods
    assert await periods.take("pings", 7, 1.0)
    assert not await periods.take("pings", 6, 1.0)  # late for a period already passed


async def test_a_flag_is_raised_once_until_lowered() -> None:
    flags = Flags(None, "q", ttl_s=5)
    assert await flags.raise_("step:r1")
    assert not await flags.raise_("step:r1")
    assert await flags.raise_("step:r2")
    await flags.lower("step:r1")
    assert await flags.raise_("step:r1")
