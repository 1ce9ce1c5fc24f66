"""The embedded server's loops: every job the settings enable, from the registry.

A job with an ``embedded`` form runs it (the run driver, the referee, the
health monitor: loops of their own that the routes can wake); a periodic job
without one runs its step once per period (the first time after one period).
Each is a named loop of one :class:`~palaestra.jobs.supervisor.Supervisor`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from palaestra.engine.loops import every
from palaestra.jobs.context import EmbeddedWork
from palaestra.jobs.registry import JOBS
from palaestra.jobs.supervisor import Loop, Supervisor

__all__ = ["embedded_loops", "embedded_supervisor"]


def embedded_loops(work: EmbeddedWork) -> list[Loop]:
    """A loop for each job that runs in one process with ``work``'s settings."""
    settings = work.platform.settings
    loops = []
    run: Callable[[], Awaitable[None]]
    for job in JOBS:
        if not job.enabled(settings):
            continue
        if job.embedded is not None:
            run = partial(job.embedded, work)
        elif job.period is not None:
            run = partial(every, job.period(settings), work.stop, partial(job.step, work), job.name)
        else:
            continue  # kicked only, and another job's loop does its work here
        loops.append(Loop(job.name, run, job.stop_within_s))
    return loops


def embedded_supervisor(work: EmbeddedWork) -> Supervisor:
    """The supervisor of the embedded server's loops, stopped by ``work.stop``."""
    return Supervisor(embedded_loops(work), work.stop)
