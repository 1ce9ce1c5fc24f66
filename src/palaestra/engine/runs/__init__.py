"""edgearena runs: a goal turned into ranked, critiqued candidates by agents' tasks.

- ``service``: start, list and read runs and tasks;
- ``reading``: the one reader of a run as it stands, for the API and the pages;
- ``stepper``: one step of a run, the same in both modes (the planning rules are in
  ``rules.runflow``), with the port (``RunMode``) the mode-specific part comes through;
- ``snapshot``: a run as the store holds it; ``progress``: what a step writes as it moves on;
- ``driver``: runs stepped in this process (the embedded server);
- ``work``: one opened task sent signed, or answered by the house, and recorded;
- ``dispatch``: opens slots (selection, RUNNING rows), before anything is sent;
- ``recorder``: ends tasks with their outcome and moves the agents' status machines;
- ``completion``: the async completion callback;
- ``house``: the house agent that serves a slot no agent could;
- ``report``: writes the settlement that ``rules.report`` decides.
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
    OPEN_COLUMNS,
    Opened,
    SlotRequest,
    open_slots,
    payload_of,
)
from palaestra.engine.runs.driver import (
    InProcess,
    RunDriver,
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
from palaestra.engine.runs.progress import (
    make_candidates,
    make_shortlist,
    note_phase,
    timeouts,
)
from palaestra.engine.runs.reading import (
    TASK_FACTS,
    RunDetail,
    read_run,
    shown_report,
    task_facts,
)
from palaestra.engine.runs.recorder import (
    END_COLUMNS,
    END_CONDITIONS,
    Finish,
    Recorder,
    Verdict,
)
from palaestra.engine.runs.report import (
    settle,
)
from palaestra.engine.runs.service import (
    MAX_GOAL_CHARS,
    SIZE_LIMITS,
    get_run,
    get_task,
    list_runs,
    phase_summary,
    start_run,
)
from palaestra.engine.runs.snapshot import (
    Snapshot,
    load_snapshot,
)
from palaestra.engine.runs.stepper import (
    IN_FLIGHT_GRACE_S,
    RunMode,
    Runs,
    RunStepper,
)
from palaestra.engine.runs.work import (
    DISPATCH_USER_AGENT,
    HouseJob,
    TaskWork,
    outcome_of,
    send,
)

__all__ = [
    "BASELINE",
    "COMPLETION_BODY_CAP_BYTES",
    "DISPATCH_USER_AGENT",
    "END_COLUMNS",
    "END_CONDITIONS",
    "HOUSE_EXECUTORS",
    "HOUSE_MODEL",
    "IN_FLIGHT_GRACE_S",
    "MAX_GOAL_CHARS",
    "OPEN_COLUMNS",
    "SIZE_LIMITS",
    "TASK_FACTS",
    "CompletionDesk",
    "CompletionRejected",
    "Finish",
    "HouseAgent",
    "HouseAnswer",
    "HouseJob",
    "HouseTask",
    "InProcess",
    "Opened",
    "Recorder",
    "RunDetail",
    "RunDriver",
    "RunMode",
    "RunStepper",
    "Runs",
    "SlotRequest",
    "Snapshot",
    "TaskWork",
    "Verdict",
    "baseline_output",
    "complete_task",
    "completion_url",
    "get_run",
    "get_task",
    "list_runs",
    "load_snapshot",
    "make_candidates",
    "make_shortlist",
    "note_phase",
    "open_slots",
    "outcome_of",
    "payload_of",
    "phase_summary",
    "read_run",
    "send",
    "settle",
    "shown_report",
    "start_run",
    "task_facts",
    "timeouts",
]
