"""The deliberately exported names of palaestra.protocol and palaestra.egress."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

import palaestra.egress
import palaestra.protocol

PROTOCOL_API = [
    "AnalystSimulation",
    "BuildSimulation",
    "CAGE_RULESET",
    "ChallengeReply",
    "ChallengeRequest",
    "ChatMessage",
    "CompletionBody",
    "DispatchPayload",
    "DispatchReply",
    "Envelope",
    "Failure",
    "FailureKind",
    "HandshakeErrorCode",
    "HandshakeRequest",
    "InvalidJson",
    "InvalidMessage",
    "PROTOCOL",
    "Phase",
    "RESPONSE_CAP_BYTES",
    "Role",
    "SIGNATURE_HEADER",
    "SIGNED_HEADERS",
    "SchemaViolation",
    "ScoutSimulation",
    "Side",
    "SignatureProblem",
    "SignedHeaders",
    "SimulationCandidate",
    "TASK_ID_HEADER",
    "TIMESTAMP_HEADER",
    "TurnReply",
    "TurnRequest",
    "UnreachableStage",
    "UserAgent",
    "VerificationFailed",
    "Violation",
    "WallClock",
    "answers_later",
    "challenge_problem",
    "check_required_keys",
    "dumps",
    "hmac_signer",
    "idempotency_key",
    "loads",
    "parse_agent_request",
    "parse_cage_request",
    "sign",
    "signature_target",
    "signed_headers",
    "token_count_warnings",
    "turn_message",
    "turn_problem",
    "turn_warning",
    "validate_envelope",
    "validate_output",
    "verify",
]

EGRESS_API = [
    "PEER_ERRORS",
    "EgressClient",
    "EgressPolicy",
    "EgressResult",
    "PolicyResolver",
    "Signer",
    "parse_address",
    "parse_numeric_ipv4",
    "resolve_checked",
]

PACKAGES = [(palaestra.protocol, PROTOCOL_API), (palaestra.egress, EGRESS_API)]


@pytest.mark.parametrize(("package", "names"), PACKAGES, ids=["protocol", "egress"])
def test_all_is_pinned(package: ModuleType, names: list[str]) -> None:
    assert sorted(package.__all__) == sorted(names)
    assert len(set(package.__all__)) == len(package.__all__)


@pytest.mark.parametrize(
    ("module", "name"),
    [(package.__name__, name) for package, names in PACKAGES for name in names],
)
def test_every_exported_name_is_importable(module: str, name: str) -> None:
    assert getattr(importlib.import_module(module), name) is not None


@pytest.mark.parametrize(("package", "names"), PACKAGES, ids=["protocol", "egress"])
def test_star_import_gives_exactly_all(package: ModuleType, names: list[str]) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {package.__name__} import *", namespace)  # noqa: S102 - a star import is the test
    assert sorted(set(namespace) - {"__builtins__"}) == sorted(names)
