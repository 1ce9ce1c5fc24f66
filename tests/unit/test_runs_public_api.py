"""The deliberately exported names of the run rules, services, API schemas and CLI."""

from __future__ import annotations

import importlib

import pytest

EXPORTS = {
    "palaestra.rules.selection": {
        "EXPLORATION_BAND",
        "Contender",
        "Draw",
        "HashDraw",
        "Roster",
        "eligible",
        "rank",
        "select",
    },
    "palaestra.rules.runflow": {
        "DEFAULT_MAX_REROUTES",
        "DEFAULT_SIZES",
        "CandidateStatus",
        "RunSizes",
        "RunStatus",
        "SlotKey",
        "SlotNeed",
        "SlotState",
        "TaskStatus",
        "TaskView",
        "candidate_done",
        "next_needs",
        "phase_done",
        "slot_keys",
        "slot_state",
    },
    "palaestra.rules.scoring": {
        "CONFIDENCE_WEIGHT",
        "DUPLICATE_JACCARD",
        "DUPLICATE_RATIO",
        "REPUTATION_ALPHA",
        "CandidateScore",
        "Shortlist",
        "ShortlistEntry",
        "contribution",
        "final_score",
        "is_eliminating",
        "near_duplicate",
        "outcome",
        "shortlist",
        "shortlist_score",
        "structure",
        "updated_reputation",
        "verification_score",
    },
    "palaestra.engine.prompts": {
        "CONTEXT_LIMIT_CHARS",
        "DEFAULT_LAUNCHPAD",
        "LAUNCHPADS",
        "Launchpad",
        "messages_for",
        "system_prompt",
    },
    "palaestra.engine.house": {
        "BASELINE",
        "HOUSE_EXECUTORS",
        "HOUSE_MODEL",
        "HouseAgent",
        "HouseAnswer",
        "HouseTask",
        "baseline_output",
    },
    "palaestra.engine.recorder": {"Finish", "Recorder", "Verdict"},
    "palaestra.engine.dispatch": {
        "DISPATCH_USER_AGENT",
        "Opened",
        "SlotRequest",
        "open_slots",
        "outcome_of",
        "payload_of",
        "send",
    },
    "palaestra.engine.runs": {
        "MAX_GOAL_CHARS",
        "SIZE_LIMITS",
        "RunDetail",
        "get_run",
        "get_task",
        "list_runs",
        "phase_summary",
        "start_run",
    },
    "palaestra.engine.orchestrator": {"IN_FLIGHT_GRACE_S", "RunDriver", "Snapshot"},
    "palaestra.engine.report": {"SCORE_FORMULA", "build_report", "settle", "task_href"},
    "palaestra.engine.completion": {
        "CompletionDesk",
        "CompletionRejected",
        "complete_task",
        "completion_url",
    },
    "palaestra.store.bulk": {
        "insert_rows",
        "insert_values",
        "json_text",
        "update_rows",
        "update_values",
    },
    "palaestra.store.db": {"Database", "migrate"},
    "palaestra.store.writer": {"SqliteWriter"},
    "palaestra.store.checkpoint": {"CHECKPOINT_INTERVAL_S", "Checkpointer"},
    "palaestra.api.run_schemas": {
        "Accepted",
        "CandidateOut",
        "NewRun",
        "PhaseOut",
        "RunCreated",
        "RunDetailOut",
        "RunOut",
        "RunSizesIn",
        "TaskDetailOut",
        "TaskOut",
    },
    "palaestra.api.routes_runs": {"RunsDep", "get_runs", "router"},
    "palaestra.api.routes_completion": {"router"},
    "palaestra.cli.runs": {"render_progress", "render_report", "run"},
}


@pytest.mark.parametrize(("module", "names"), sorted(EXPORTS.items()))
def test_all_is_pinned(module: str, names: set[str]) -> None:
    loaded = importlib.import_module(module)
    assert set(loaded.__all__) == names
    assert len(loaded.__all__) == len(names)
    assert all(getattr(loaded, name, None) is not None for name in names)
