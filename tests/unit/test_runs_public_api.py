"""The deliberately exported names of the run rules, services, API schemas and CLI."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import palaestra

EXPORTS = {
    "palaestra.rules.runs.selection": {
        "EXPLORATION_BAND",
        "Contender",
        "Draw",
        "HashDraw",
        "Roster",
        "eligible",
        "rank",
        "select",
    },
    "palaestra.rules.runs.runflow": {
        "DEFAULT_MAX_REROUTES",
        "DEFAULT_SIZES",
        "CandidateStatus",
        "RunSizes",
        "RunStatus",
        "SlotIndex",
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
    "palaestra.rules.runs.scoring": {
        "CONFIDENCE_WEIGHT",
        "REPUTATION_ALPHA",
        "CandidateScore",
        "Shortlist",
        "ShortlistEntry",
        "contribution",
        "final_score",
        "is_eliminating",
        "outcome",
        "shortlist",
        "shortlist_score",
        "structure",
        "updated_reputation",
        "verification_score",
    },
    "palaestra.rules.runs.prompts": {
        "CONTEXT_LIMIT_CHARS",
        "DEFAULT_LAUNCHPAD",
        "LAUNCHPADS",
        "Launchpad",
        "messages_for",
        "system_prompt",
    },
    "palaestra.rules.runs.house_answers": {
        "BASELINE",
        "HOUSE_EXECUTORS",
        "HOUSE_MODEL",
        "HouseTask",
        "baseline_output",
    },
    "palaestra.engine.runs.house": {
        "HouseAgent",
        "HouseAnswer",
        "HouseModel",
        "HouseWriter",
    },
    "palaestra.engine.runs.recorder": {
        "END_COLUMNS",
        "END_CONDITIONS",
        "Finish",
        "Recorder",
        "Recording",
    },
    "palaestra.engine.runs.dispatch": {
        "OPEN_COLUMNS",
        "Body",
        "Opened",
        "SlotRequest",
        "open_in",
        "open_slots",
        "payload_of",
    },
    "palaestra.engine.runs.service": {
        "MAX_GOAL_CHARS",
        "SIZE_LIMITS",
        "get_run",
        "get_task",
        "list_runs",
        "phase_summary",
        "start_run",
    },
    "palaestra.engine.runs": {
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
    },
    "palaestra.engine.runs.stepper": {"BATCH", "LEASE_S", "RunStepper", "Stepped"},
    "palaestra.engine.runs.driver": {"RunDriver", "Runs", "SteppedRuns"},
    "palaestra.engine.runs.facts": {
        "ClaimedRun",
        "Context",
        "Scouted",
        "read_context",
        "read_facts",
        "read_records",
    },
    "palaestra.engine.runs.writes": {
        "BatchWrite",
        "RunWrite",
        "Written",
        "claim_sends",
        "write_batch",
    },
    "palaestra.engine.runs.work": {
        "DISPATCH_USER_AGENT",
        "HouseJob",
        "InFlight",
        "Reservation",
        "Reserved",
        "Sent",
        "TaskWork",
        "outcome_of",
        "post",
        "send",
    },
    "palaestra.rules.runs.report": {
        "SCORE_FORMULA",
        "CandidateFate",
        "CandidateRecord",
        "RunRecord",
        "Settlement",
        "TaskRecord",
        "build_report",
        "candidate_fates",
        "candidate_scores",
        "reputations_after",
        "settled_contributions",
        "settlement",
        "task_href",
    },
    "palaestra.engine.runs.completion": {
        "COMPLETION_BODY_CAP_BYTES",
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
    "palaestra.store.lists": {"one_of"},
    "palaestra.rules.runs.titles": {
        "DUPLICATE_JACCARD",
        "DUPLICATE_RATIO",
        "Title",
        "near",
        "near_duplicate",
        "title",
    },
    "palaestra.runtime": {
        "GC_THRESHOLDS",
        "MALLOC_ARENAS",
        "SWITCH_INTERVAL_S",
        "limit_malloc_arenas",
        "settle",
    },
    "palaestra.errors": {
        "ConfigurationError",
        "Conflict",
        "EgressRefused",
        "EntrantMisconfigured",
        "Forbidden",
        "InvalidClaimCode",
        "InvalidCredential",
        "InvalidRequest",
        "InvalidUrl",
        "NotFound",
        "PalaestraError",
        "ProtocolError",
        "SignatureError",
        "StoreClosed",
        "TooManyRequests",
        "Unauthorized",
    },
    "palaestra.rules.status": {
        "DEGRADED_AT",
        "DISPATCHABLE",
        "PINGABLE",
        "PING_INTERVAL_S",
        "PROBATION_AT",
        "SUSPENDED_AT",
        "AgentState",
        "Event",
        "PingSchedule",
        "Status",
        "next_ping_at",
        "ping_interval",
        "settled_by_success",
        "transition",
    },
    "palaestra.store.writer": {"SqliteWriter"},
    "palaestra.store.checkpoint": {"CHECKPOINT_INTERVAL_S", "SAFETY_NET_PAGES", "Checkpointer"},
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
    "palaestra.api.routes_runs": {"PREFIX", "RunsDep", "get_runs", "router"},
    "palaestra.api.routes_completion": {"BODY_CAP", "router"},
    "palaestra.cli.runs": {"render_progress", "render_report", "run"},
}


@pytest.mark.parametrize(("module", "names"), sorted(EXPORTS.items()))
def test_all_is_pinned(module: str, names: set[str]) -> None:
    loaded = importlib.import_module(module)
    assert set(loaded.__all__) == names
    assert len(loaded.__all__) == len(names)
    assert all(getattr(loaded, name, None) is not None for name in names)


def test_the_runs_package_exports_only_what_other_packages_use() -> None:
    package = Path(palaestra.__file__).parent
    used: set[str] = set()
    for path in package.rglob("*.py"):
        if path.is_relative_to(package / "engine" / "runs"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "palaestra.engine.runs"
            ):
                used |= {alias.name for alias in node.names}
    runs = importlib.import_module("palaestra.engine.runs")
    assert set(runs.__all__) - used == set()
