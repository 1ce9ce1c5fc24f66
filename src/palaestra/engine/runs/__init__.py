"""edgearena runs: a goal turned into ranked, critiqued candidates by agents' tasks.

- ``service``: start, list and read runs and tasks;
- ``reading``: the one reader of a run as it stands, for the API and the pages;
- ``stepper``: steps batches of runs by lease, the same in both modes (the
  decisions are ``rules.runplan``'s); ``facts``: what a step reads, in bulk;
  ``writes``: what a step writes, one transaction a batch;
- ``driver``: runs stepped in this process (the embedded server);
- ``work``: one opened task sent signed, or answered by the house, and recorded;
- ``dispatch``: opens slots (selection, RUNNING rows), before anything is sent;
- ``recorder``: ends tasks with their outcome and moves the agents' status machines;
- ``completion``: the async completion callback;
- ``house``: the house agent that serves a slot no agent could.
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
    Body,
    Opened,
    SlotRequest,
    open_in,
    open_slots,
    payload_of,
)
from palaestra.engine.runs.driver import (
    RunDriver,
)
from palaestra.engine.runs.facts import (
    ClaimedRun,
    Context,
    Scouted,
    read_context,
    read_facts,
    read_records,
)
from palaestra.engine.runs.house import HouseAgent, HouseAnswer
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
from palaestra.engine.runs.service import (
    MAX_GOAL_CHARS,
    SIZE_LIMITS,
    RunSummary,
    get_run,
    get_task,
    list_runs,
    phase_summary,
    start_run,
)
from palaestra.engine.runs.stepper import (
    BATCH,
    LEASE_S,
    Runs,
    RunStepper,
    Stepped,
)
from palaestra.engine.runs.work import (
    DISPATCH_USER_AGENT,
    HouseJob,
    InFlight,
    TaskWork,
    outcome_of,
    send,
)
from palaestra.engine.runs.writes import (
    BatchWrite,
    RunWrite,
    Written,
    write_batch,
)
from palaestra.rules.house_answers import (
    BASELINE,
    HOUSE_EXECUTORS,
    HOUSE_MODEL,
    HouseTask,
    baseline_output,
)

__all__ = [
    "BASELINE",
    "BATCH",
    "COMPLETION_BODY_CAP_BYTES",
    "DISPATCH_USER_AGENT",
    "END_COLUMNS",
    "END_CONDITIONS",
    "HOUSE_EXECUTORS",
    "HOUSE_MODEL",
    "LEASE_S",
    "MAX_GOAL_CHARS",
    "OPEN_COLUMNS",
    "SIZE_LIMITS",
    "TASK_FACTS",
    "BatchWrite",
    "Body",
    "ClaimedRun",
    "CompletionDesk",
    "CompletionRejected",
    "Context",
    "Finish",
    "HouseAgent",
    "HouseAnswer",
    "HouseJob",
    "HouseTask",
    "InFlight",
    "Opened",
    "Recorder",
    "RunDetail",
    "RunDriver",
    "RunStepper",
    "RunSummary",
    "RunWrite",
    "Runs",
    "Scouted",
    "SlotRequest",
    "Stepped",
    "TaskWork",
    "Verdict",
    "Written",
    "baseline_output",
    "complete_task",
    "completion_url",
    "get_run",
    "get_task",
    "list_runs",
    "open_in",
    "open_slots",
    "outcome_of",
    "payload_of",
    "phase_summary",
    "read_context",
    "read_facts",
    "read_records",
    "read_run",
    "send",
    "shown_report",
    "start_run",
    "task_facts",
    "write_batch",
]
