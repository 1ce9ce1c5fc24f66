"""The API's operations named for what they do: their OpenAPI ``operationId`` and summary.

A client generated from ``/openapi.json`` names its functions after the operation ids
(``get_run``, ``list_runs``), so they are chosen here, one table for the whole API,
instead of FastAPI's ``one_api_runs__run_id__get``. A route missing from the table is
named after its endpoint function. Each route's description is its docstring.
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import FastAPI
from fastapi.routing import APIRoute

__all__ = ["OPERATIONS", "describe_operations", "operation_id"]

#: (method, path) -> (operationId, summary).
OPERATIONS: Final[dict[tuple[str, str], tuple[str, str]]] = {
    ("POST", "/api/agent-tasks/{task_id}/complete"): (
        "complete_task",
        "Deliver a deferred task's output (seed)",
    ),
    ("GET", "/healthz"): ("get_health", "Whether the server and its database answer"),
    ("GET", "/metrics"): ("get_metrics", "Prometheus metrics"),
    ("POST", "/api/owners"): ("create_owner", "Create an owner and its token"),
    ("POST", "/api/agents"): ("register_agent", "Register an edgearena agent"),
    ("GET", "/api/agents"): ("list_agents", "List the caller's agents"),
    ("GET", "/api/agents/{agent_id}"): ("get_agent", "Read an agent"),
    ("PATCH", "/api/agents/{agent_id}"): ("update_agent", "Change an agent's endpoint"),
    ("GET", "/api/agents/{agent_id}/history"): ("get_agent_history", "An agent's history"),
    ("POST", "/api/agents/{agent_id}/wizard"): ("run_agent_wizard", "Run the wizard"),
    ("POST", "/api/agents/{agent_id}/pause"): ("pause_agent", "Pause an agent"),
    ("POST", "/api/agents/{agent_id}/resume"): ("resume_agent", "Resume a paused agent"),
    ("POST", "/api/agents/{agent_id}/hold"): ("hold_agent", "Hold an agent (admin)"),
    ("POST", "/api/agents/{agent_id}/release"): ("release_agent", "Release a hold (admin)"),
    ("POST", "/api/agents/{agent_id}/rotate-key"): ("rotate_agent_key", "Issue a new agent key"),
    ("POST", "/api/agents/{agent_id}/verify"): ("verify_agent", "Verify an agent (seed)"),
    ("POST", "/api/fighters"): ("create_fighter", "Create a cage fighter"),
    ("POST", "/api/fighters/endpoint"): (
        "register_fighter_endpoint",
        "Prove and set a fighter's endpoint (seed)",
    ),
    ("GET", "/api/fighters/{fighter_id}"): ("get_fighter", "A fighter's public profile"),
    ("PATCH", "/api/fighters/{fighter_id}"): (
        "update_fighter",
        "Change a fighter's challenges or its model",
    ),
    ("GET", "/api/leaderboard"): ("get_leaderboard", "The published leaderboard"),
    ("GET", "/api/leaderboard/live"): ("get_live_leaderboard", "The live cage ratings"),
    ("POST", "/api/leaderboard/recompute"): (
        "recompute_leaderboard",
        "Publish the leaderboard again (admin)",
    ),
    ("GET", "/api/matchmaking"): ("get_matchmaking", "The matchmaker's state (admin)"),
    ("POST", "/api/matchmaking/pause"): ("pause_matchmaking", "Pause the matchmaker (admin)"),
    ("POST", "/api/matchmaking/resume"): ("resume_matchmaking", "Resume the matchmaker (admin)"),
    ("POST", "/api/runs"): ("start_run", "Start a run"),
    ("GET", "/api/runs"): ("list_runs", "List recent runs"),
    ("GET", "/api/runs/{run_id}"): ("get_run", "Read a run"),
    ("GET", "/api/runs/{run_id}/tasks/{task_id}"): ("get_run_task", "Read one task of a run"),
    ("POST", "/api/matches"): ("start_match", "Start a cage match"),
    ("GET", "/api/matches"): ("list_matches", "List recent matches"),
    ("GET", "/api/matches/{match_id}"): ("get_match", "A match's transcript"),
}


def _key(route: APIRoute) -> tuple[str, str]:
    return ",".join(sorted(route.methods or ())), route.path_format


def operation_id(route: APIRoute) -> str:
    """The ``operationId`` of ``route``: the table's, else its endpoint function's name."""
    named = OPERATIONS.get(_key(route))
    return named[0] if named is not None else route.name


def describe_operations(app: FastAPI) -> None:
    """Give every operation of ``app``'s OpenAPI document the table's summary (its id is
    set by :func:`operation_id`, FastAPI's ``generate_unique_id_function``)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        document = build()
        for path, operations in document["paths"].items():
            for method, operation in operations.items():
                named = OPERATIONS.get((method.upper(), path))
                if named is not None:
                    operation["summary"] = named[1]
        return document

    app.openapi = openapi  # type: ignore[method-assign]
