"""edgearena runs: a goal turned into ranked, critiqued candidates by agents' tasks.

- ``service``: start, list and read runs and tasks;
- ``reading``: the one reader of a run as it stands, for the API and the pages;
- ``stepper``: steps batches of runs by lease, the same in both modes (the
  decisions are ``rules.runs.runplan``'s); ``facts``: what a step reads, in bulk;
  ``writes``: what a step writes, one transaction a batch;
- ``driver``: runs stepped in this process (the embedded server);
- ``work``: one opened task sent signed, or answered by the house, and recorded;
- ``dispatch``: opens slots (selection, RUNNING rows), before anything is sent;
- ``recorder``: ends tasks with their outcome and moves the agents' status machines;
- ``completion``: the async completion callback;
- ``house``: the house agent that serves a slot no agent could;
- ``endpoint``: where the completion endpoint stands, to judge a missed callback.

``__all__`` holds what other packages use; the rest is imported from its module.
"""

from __future__ import annotations

from palaestra.engine.runs.completion import COMPLETION_BODY_CAP_BYTES, CompletionRejected
from palaestra.engine.runs.driver import RunDriver, Runs
from palaestra.engine.runs.reading import RunDetail, RunRead, TaskRead, read_run, shown_report
from palaestra.engine.runs.service import (
    MAX_GOAL_CHARS,
    SIZE_LIMITS,
    phase_summary,
    start_run,
)
from palaestra.engine.runs.stepper import BATCH, Stepped
from palaestra.engine.runs.work import DISPATCH_USER_AGENT

__all__ = [
    "BATCH",
    "COMPLETION_BODY_CAP_BYTES",
    "DISPATCH_USER_AGENT",
    "MAX_GOAL_CHARS",
    "SIZE_LIMITS",
    "CompletionRejected",
    "RunDetail",
    "RunDriver",
    "RunRead",
    "Runs",
    "Stepped",
    "TaskRead",
    "phase_summary",
    "read_run",
    "shown_report",
    "start_run",
]
