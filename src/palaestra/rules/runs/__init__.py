"""edgearena runs, pure.

- ``runflow``: which slots need a dispatch, when a run is done; ``runplan``: a step's actions;
- ``selection``: which agent gets a slot;
- ``scoring`` (with ``titles``): the shortlist, scores, contributions, reputation;
  ``report``: the end of a run;
- ``prompts``: the production prompts; ``house_answers``, ``house_fields`` and
  ``answer_check``: the house's answers, the fields its local model writes, their check.

``__all__`` holds what other packages use; the rest is imported from its module.
"""

from __future__ import annotations

from palaestra.rules.runs.answer_check import AnswerProblem, answer_problems
from palaestra.rules.runs.house_answers import (
    BASELINE,
    HOUSE_EXECUTORS,
    HOUSE_MODEL,
    HouseTask,
    baseline_output,
)
from palaestra.rules.runs.house_fields import FIELDS, bank_text, field_grammar, field_prompt
from palaestra.rules.runs.prompts import DEFAULT_LAUNCHPAD, LAUNCHPADS, messages_for
from palaestra.rules.runs.report import (
    CandidateRecord,
    RunRecord,
    Settlement,
    TaskRecord,
    reputations_after,
    settlement,
    task_href,
)
from palaestra.rules.runs.runflow import (
    DEFAULT_MAX_REROUTES,
    CandidateStatus,
    RunSizes,
    RunStatus,
    TaskStatus,
    TaskView,
    phase_done,
)
from palaestra.rules.runs.runplan import (
    CallbackEndpoint,
    CandidateFacts,
    EndKind,
    NewCandidate,
    Plan,
    RunFacts,
    TaskFacts,
    callback_void_at,
    plan,
)
from palaestra.rules.runs.scoring import Shortlist, shortlist_score, updated_reputation
from palaestra.rules.runs.selection import Contender, HashDraw, Roster

__all__ = [
    "BASELINE",
    "DEFAULT_LAUNCHPAD",
    "DEFAULT_MAX_REROUTES",
    "FIELDS",
    "HOUSE_EXECUTORS",
    "HOUSE_MODEL",
    "LAUNCHPADS",
    "AnswerProblem",
    "CallbackEndpoint",
    "CandidateFacts",
    "CandidateRecord",
    "CandidateStatus",
    "Contender",
    "EndKind",
    "HashDraw",
    "HouseTask",
    "NewCandidate",
    "Plan",
    "Roster",
    "RunFacts",
    "RunRecord",
    "RunSizes",
    "RunStatus",
    "Settlement",
    "Shortlist",
    "TaskFacts",
    "TaskRecord",
    "TaskStatus",
    "TaskView",
    "answer_problems",
    "bank_text",
    "baseline_output",
    "callback_void_at",
    "field_grammar",
    "field_prompt",
    "messages_for",
    "phase_done",
    "plan",
    "reputations_after",
    "settlement",
    "shortlist_score",
    "task_href",
    "updated_reputation",
]
