"""Every worker job, declared once: its name, when it runs, and what it does.

A :class:`Job` is an idempotent step keyed by ids; the database decides, so a
job delivered twice (its worker died before acknowledging it) or run twice at
once only finds that the work is taken. Both modes run what is declared here,
and nothing else:

- workers (``palaestra worker``, ``palaestra serve`` with a broker) register
  every job as a taskiq task named ``palaestra.<name>``
  (:class:`~palaestra.jobs.tasks.Jobs`), and their scheduler kicks each
  periodic one once per period across the cluster
  (:class:`~palaestra.jobs.scheduler.Scheduler`);
- the embedded server runs each enabled one as a named, supervised loop
  (:func:`~palaestra.jobs.embedded.embedded_loops`): its ``embedded`` form when
  it has one (a loop of its own), else its step once per period.

A job is periodic when it has a ``period`` (read from the settings), else it
is only kicked (by a route, or by another job).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from palaestra.jobs import matchmaking, pings, stepping, sweeper, turns, upkeep
from palaestra.jobs.context import EmbeddedWork
from palaestra.settings import Settings

__all__ = ["JOBS", "Job", "job", "periodic"]


def _always(settings: Settings) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Job:
    """One job: see the module docstring."""

    name: str
    #: The step a worker runs: ``step(work, *args)``, ``work`` a
    #: :class:`~palaestra.jobs.context.WorkerWork` (a periodic step without an
    #: ``embedded`` form needs only a :class:`~palaestra.jobs.context.Work`).
    step: Callable[..., Awaitable[Any]]
    #: Seconds between two runs, from the settings; None: the job is only kicked.
    period: Callable[[Settings], float] | None = None
    #: Whether it runs at all (scheduled, or as an embedded loop); a kicked job is
    #: registered on the workers whatever this says.
    enabled: Callable[[Settings], bool] = _always
    #: The embedded server's loop for it, until ``work.stop``; None: its step every period.
    embedded: Callable[[EmbeddedWork], Awaitable[None]] | None = None
    #: How long the embedded loop may take to end once stopped before it is abandoned
    #: (None: as long as it takes).
    stop_within_s: float | None = None


JOBS: Final[tuple[Job, ...]] = (
    Job(
        "ping_due",
        pings.ping_due,
        period=lambda s: s.schedule_tick_s,
        enabled=lambda s: s.monitor_enabled,
        embedded=pings.monitor,
    ),
    Job(
        "step_runs",
        stepping.step_runs,
        enabled=lambda s: s.runs_enabled,
        embedded=stepping.drive_runs,
    ),
    Job(
        "play_turn",
        turns.play_turn,
        enabled=lambda s: s.referee_enabled,
        embedded=turns.referee,
    ),
    Job("play_pending", turns.play_pending),
    Job(
        "matchmake",
        matchmaking.matchmake,
        period=lambda s: s.matchmaking_interval_s,
        enabled=lambda s: s.matchmaking_enabled,
    ),
    Job(
        "ratings",
        upkeep.ratings,
        period=lambda s: s.ratings_interval_s,
        enabled=lambda s: s.ratings_enabled,
        # A recomputation still running is abandoned; the next start redoes it.
        stop_within_s=10.0,
    ),
    Job(
        "sweep",
        lambda work: sweeper.sweep(work.platform, work.kicks),
        period=lambda s: s.sweep_interval_s,
    ),
    # Always: on PostgreSQL it also makes the coming days' event partitions.
    Job("retention", upkeep.retention, period=lambda s: s.retention_interval_s),
    Job("roll_up", upkeep.roll_up, period=lambda s: s.rollup_interval_s),
)


def job(name: str) -> Job:
    """The job declared as ``name``."""
    return next(declared for declared in JOBS if declared.name == name)


def periodic(settings: Settings) -> list[tuple[Job, float]]:
    """The periodic jobs ``settings`` enable, each with its period: what the scheduler
    kicks, what the embedded server runs on a period."""
    return [(j, j.period(settings)) for j in JOBS if j.period is not None and j.enabled(settings)]
