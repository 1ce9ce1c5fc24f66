"""The declared jobs: both modes run the same ones, from the one registry."""

from __future__ import annotations

import pytest

from palaestra.engine.cage.referee import Referee
from palaestra.engine.runs.driver import RunDriver
from palaestra.jobs.broker import InProcessBroker
from palaestra.jobs.context import EmbeddedWork
from palaestra.jobs.embedded import embedded_loops
from palaestra.jobs.registry import JOBS, job
from palaestra.jobs.scheduler import LocalPeriods, Scheduler
from palaestra.jobs.tasks import Jobs
from palaestra.platform import Platform

#: What the settings can switch off, by the job each one runs.
SWITCHES = {
    "monitor_enabled": "ping_due",
    "matchmaking_enabled": "matchmake",
    "ratings_enabled": "ratings",
    "runs_enabled": "step_runs",
    "referee_enabled": "play_turn",
}


@pytest.mark.parametrize("switched_on", [True, False])
async def test_the_embedded_server_and_the_workers_run_the_same_declared_jobs(
    platform: Platform, switched_on: bool
) -> None:
    for setting in SWITCHES:
        setattr(platform.settings, setting, switched_on)
    runs = RunDriver(platform)
    work = EmbeddedWork(platform, runs, Referee(platform))
    embedded = {loop.name for loop in embedded_loops(work)}
    broker = InProcessBroker(max_async_tasks=4)
    jobs = Jobs(broker, platform)
    scheduled = {entry.name for entry in Scheduler(jobs, LocalPeriods()).schedule}
    try:
        always = {"sweep", "retention", "roll_up"}
        switched = {"ping_due", "matchmake", "ratings"} if switched_on else set()
        assert scheduled == always | switched
        # In one process the periodic jobs run on their period, and the kicked jobs whose
        # work needs a loop here (the runs, the matches) run it; nothing else.
        assert {name for name in embedded if job(name).period is not None} == scheduled
        assert embedded - scheduled == ({"step_runs", "play_turn"} if switched_on else set())
        # A worker can run every declared job, kicked or scheduled.
        assert set(jobs.tasks) == {declared.name for declared in JOBS}
        assert all(broker.find_task(f"palaestra.{declared.name}") for declared in JOBS)
    finally:
        await jobs.close()
        await runs.close()


def test_each_setting_that_switches_a_job_off_names_a_declared_job() -> None:
    assert set(SWITCHES.values()) <= {declared.name for declared in JOBS}
    assert len({declared.name for declared in JOBS}) == len(JOBS)
