"""edgearena runs: a goal turned into ranked, critiqued candidates by agents' tasks.

- ``service``: start, list and read runs and tasks;
- ``stepper``: advances runs through their phases (the planning rules are in ``rules.runflow``);
- ``snapshot``: a run as the store holds it, read in one go for a step;
- ``dispatch``: opens slots (selection, RUNNING rows) and sends signed tasks;
- ``recorder``: ends tasks with their outcome and moves the agents' status machines;
- ``completion``: the async completion callback;
- ``house``: the house agent that serves a slot no agent could;
- ``report``: the settlement of a finished run written (decided by ``rules.report``).
"""

from __future__ import annotations

from palaestra.engine.runs.completion import (
    COMPLETION_BODY_CAP_BYTES,
    CompletionDesk,
    CompletionRejected,
    complete_task,
    completion_url,
)
from palaestra.engine.runs.dispatch import (
    DISPATCH_USER_AGENT,
    Opened,
    SlotRequest,
    open_slots,
    outcome_of,
    payload_of,
    send,
)
from palaestra.engine.runs.house import (
    BASELINE,
    HOUSE_EXECUTORS,
    HOUSE_MODEL,
    HouseAgent,
    HouseAnswer,
    HouseTask,
    baseline_output,
)
from palaestra.engine.runs.recorder import (
    Finish,
    Recorder,
    Verdict,
)
from palaestra.engine.runs.report import settle
from palaestra.engine.runs.service import (
    MAX_GOAL_CHARS,
    SIZE_LIMITS,
    RunDetail,
    get_run,
    get_task,
    list_runs,
    phase_summary,
    start_run,
)
from palaestra.engine.runs.snapshot import Snapshot, load_snapshot
from palaestra.engine.runs.stepper import IN_FLIGHT_GRACE_S, RunDriver

__all__ = [
    "BASELINE",
    "COMPLETION_BODY_CAP_BYTES",
    "DISPATCH_USER_AGENT",
    "HOUSE_EXECUTORS",
    "HOUSE_MODEL",
    "IN_FLIGHT_GRACE_S",
    "MAX_GOAL_CHARS",
    "SIZE_LIMITS",
    "CompletionDesk",
    "CompletionRejected",
    "Finish",
    "HouseAgent",
    "HouseAnswer",
    "HouseTask",
    "Opened",
    "Recorder",
    "RunDetail",
    "RunDriver",
    "SlotRequest",
    "Snapshot",
    "Verdict",
    "baseline_output",
    "complete_task",
    "completion_url",
    "get_run",
    "get_task",
    "list_runs",
    "load_snapshot",
    "open_slots",
    "outcome_of",
    "payload_of",
    "phase_summary",
    "send",
    "settle",
    "start_run",
]
