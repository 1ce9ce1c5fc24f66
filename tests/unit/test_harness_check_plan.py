"""The conformance runner's plan: which checks run, in which order, against which deadlines."""

from __future__ import annotations

import importlib

import pytest

from palaestra.checks.conformance import Deadlines, cage_check_names, edgearena_check_names
from palaestra.protocol import Phase, Role

CHECKS_API = {
    "palaestra.checks.conformance": [
        "Deadlines",
        "Progress",
        "cage_check_names",
        "check_cage",
        "check_edgearena",
        "edgearena_check_names",
        "run_checks",
    ],
    "palaestra.checks.edgearena": [
        "DISPATCH_USER_AGENT",
        "STALE_BY_SECONDS",
        "dispatch",
        "health",
        "repeated_task_id",
        "stale_timestamp",
    ],
    "palaestra.checks.cage": [
        "CAGE_USER_AGENT",
        "challenge",
        "message_warning",
        "repeated_idempotency_key",
        "turn",
    ],
    "palaestra.checks.sending": ["SentRequest", "resend", "send"],
}


@pytest.mark.parametrize(("module", "names"), sorted(CHECKS_API.items()))
def test_conformance_api_is_pinned(module: str, names: list[str]) -> None:
    loaded = importlib.import_module(module)
    assert sorted(loaded.__all__) == names
    for name in loaded.__all__:
        assert hasattr(loaded, name)


@pytest.mark.parametrize(
    ("role", "dispatches"),
    [
        (Role.SCOUT, ["dispatch:SCOUT", "dispatch:SCOUT:timing"]),
        (Role.BUILDER, ["dispatch:BUILD", "dispatch:BUILD:timing"]),
        (
            Role.ANALYST,
            [
                "dispatch:VERIFY",
                "dispatch:VERIFY:timing",
                "dispatch:CRITIQUE",
                "dispatch:CRITIQUE:timing",
            ],
        ),
    ],
)
def test_edgearena_checks_in_order(role: Role, dispatches: list[str]) -> None:
    simulation = ["reachable", "accepts-post", "returns-json", "required-fields", "timing"]
    assert edgearena_check_names(role) == [
        "probe",
        "health",
        "handshake",
        *[f"simulation:{name}" for name in simulation],
        *[f"signed-simulation:{name}" for name in simulation],
        *dispatches,
        "tampered-signature",
        "stale-timestamp",
        "repeated-task-id",
    ]


def test_cage_checks_in_order() -> None:
    assert cage_check_names() == [
        "challenge",
        "turn:attacker",
        "turn:defender",
        "repeated-idempotency-key",
    ]


def test_default_deadlines_are_the_protocols() -> None:
    deadlines = Deadlines()
    assert dict(deadlines.phase_ms) == {
        Phase.SCOUT: 30_000,
        Phase.BUILD: 90_000,
        Phase.VERIFY: 30_000,
        Phase.CRITIQUE: 30_000,
    }
    assert deadlines.turn_ms == 60_000
    assert [deadlines.simulation_ms(role) for role in Role] == [30_000, 90_000, 30_000]


def test_scaled_deadlines() -> None:
    deadlines = Deadlines.scaled(0.01)
    assert deadlines.phase_ms[Phase.BUILD] == 900
    assert deadlines.simulation_ms(Role.ANALYST) == 300
    assert deadlines.turn_ms == 600
