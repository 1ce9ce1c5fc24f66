"""``step_runs``: one step of a batch of due runs, whose sends go out from the worker that
stepped them (:mod:`palaestra.jobs.runs`). In one process the run driver's own loop
steps the runs instead (:mod:`palaestra.engine.runs.driver`)."""

from __future__ import annotations

from palaestra.jobs.context import EmbeddedWork, WorkerWork

__all__ = ["drive_runs", "step_runs"]


async def step_runs(work: WorkerWork) -> int:
    """One step; how many runs it claimed."""
    return len((await work.runs.step()).claimed)


async def drive_runs(work: EmbeddedWork) -> None:
    """The embedded server's form: the run driver's loop, until ``work.stop``."""
    await work.runs.run(work.stop)
