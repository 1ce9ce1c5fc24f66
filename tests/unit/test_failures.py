"""Failure reasons exactly as spec/SCHEMAS.md's table, and the handshake errorCode of each."""

from __future__ import annotations

import pytest

from palaestra.protocol import (
    RESPONSE_CAP_BYTES,
    Failure,
    FailureKind,
    HandshakeErrorCode,
    UnreachableStage,
)
from palaestra.protocol.failures import CallFailure


@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        (
            Failure.http_status(503, "Service Unavailable"),
            "External agent responded with 503: Service Unavailable",
        ),
        (
            Failure.http_status(401, '{"error":"bad signature"}'),
            'External agent responded with 401: {"error":"bad signature"}',
        ),
        (Failure.http_status(302, ""), "External agent responded with 302: "),
        (
            Failure.http_status(405, "Method Not Allowed"),
            "External agent responded with 405: Method Not Allowed",
        ),
        (Failure.timeout(30000), "External agent timed out after 30000ms"),
        (Failure.timeout(90000), "External agent timed out after 90000ms"),
        (Failure.timeout(60000), "External agent timed out after 60000ms"),
        (
            Failure.invalid_json("Unexpected token '<' in JSON at position 0"),
            "Unexpected token '<' in JSON at position 0",
        ),
        (Failure.invalid_json("Unexpected end of JSON input"), "Unexpected end of JSON input"),
        (
            Failure.validation("Validation failed: Missing execution.first_milestone"),
            "Validation failed: Missing execution.first_milestone",
        ),
        (
            Failure.validation("Validation failed: body: expected an object, got array"),
            "Validation failed: body: expected an object, got array",
        ),
        (Failure.too_large(), "External agent response exceeded 262144 bytes"),
        (
            Failure.unreachable(
                UnreachableStage.DNS, "agent.example.com: Name or service not known"
            ),
            "External agent unreachable: dns: agent.example.com: Name or service not known",
        ),
        (
            Failure.unreachable(UnreachableStage.CONNECT, "connection refused"),
            "External agent unreachable: connect: connection refused",
        ),
        (
            Failure.unreachable(UnreachableStage.RESET, "connection reset by peer"),
            "External agent unreachable: reset: connection reset by peer",
        ),
        (
            Failure.unreachable(UnreachableStage.TLS, "certificate verify failed"),
            "External agent unreachable: tls: certificate verify failed",
        ),
        (
            Failure.refused("127.0.0.1 is a loopback address"),
            "Endpoint refused by egress policy: 127.0.0.1 is a loopback address",
        ),
        (
            Failure.refused("only https is allowed"),
            "Endpoint refused by egress policy: only https is allowed",
        ),
    ],
)
def test_reason_line(failure: Failure, reason: str) -> None:
    assert failure.reason == reason


def test_too_large_names_the_cap() -> None:
    assert RESPONSE_CAP_BYTES == 262_144
    assert (
        Failure.too_large().reason == f"External agent response exceeded {RESPONSE_CAP_BYTES} bytes"
    )


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        ("x" * 199, "x" * 199),
        ("x" * 200, "x" * 200),
        ("x" * 201, "x" * 200),
        ("a" * 150 + "b" * 100, "a" * 150 + "b" * 50),
        ("é" * 250, "é" * 200),
        ("<html>" + "." * 500 + "</html>", "<html>" + "." * 194),
    ],
    ids=["199", "200", "201", "cut-mid", "non-ascii", "html"],
)
def test_http_status_shows_the_first_200_characters(body: str, shown: str) -> None:
    failure = Failure.http_status(500, body)
    assert failure.reason == f"External agent responded with 500: {shown}"
    assert len(failure.reason) - len("External agent responded with 500: ") == len(shown)
    assert failure.status == 500


@pytest.mark.parametrize(
    ("failure", "kind"),
    [
        (Failure.http_status(500, ""), FailureKind.HTTP_STATUS),
        (Failure.timeout(1), FailureKind.TIMEOUT),
        (Failure.invalid_json("Unexpected end of JSON input"), FailureKind.INVALID_JSON),
        (Failure.validation("Validation failed: Missing output"), FailureKind.VALIDATION),
        (Failure.too_large(), FailureKind.TOO_LARGE),
        (Failure.unreachable(UnreachableStage.DNS, "x"), FailureKind.UNREACHABLE),
        (Failure.refused("x"), FailureKind.REFUSED),
    ],
)
def test_constructors_classify(failure: Failure, kind: FailureKind) -> None:
    assert failure.kind is kind


def test_unreachable_without_a_stage_reads_as_connect() -> None:
    failure = Failure(FailureKind.UNREACHABLE, detail="no route to host")
    assert failure.reason == "External agent unreachable: connect: no route to host"


def test_failures_are_values() -> None:
    assert Failure.timeout(30000) == Failure.timeout(30000)
    assert Failure.timeout(30000) != Failure.timeout(90000)
    with pytest.raises(AttributeError):
        Failure.too_large().detail = "x"  # type: ignore[misc]


# --- the handshake errorCode -------------------------------------------------------------------


def test_error_codes_are_the_seeds() -> None:
    assert sorted(code.value for code in HandshakeErrorCode) == [
        "dns",
        "network",
        "non-2xx",
        "non-json",
        "timeout",
    ]


STAGES: list[UnreachableStage | None] = [None, *UnreachableStage]

# kind -> errorCode, whatever the stage; UNREACHABLE is the one kind where the stage decides.
CODE_BY_KIND = {
    FailureKind.HTTP_STATUS: HandshakeErrorCode.NON_2XX,
    FailureKind.TIMEOUT: HandshakeErrorCode.TIMEOUT,
    FailureKind.INVALID_JSON: HandshakeErrorCode.NON_JSON,
    FailureKind.VALIDATION: HandshakeErrorCode.NON_JSON,
    FailureKind.TOO_LARGE: HandshakeErrorCode.NON_JSON,
    FailureKind.REFUSED: HandshakeErrorCode.NETWORK,
}
CODE_BY_STAGE = {
    None: HandshakeErrorCode.NETWORK,
    UnreachableStage.DNS: HandshakeErrorCode.DNS,
    UnreachableStage.CONNECT: HandshakeErrorCode.NETWORK,
    UnreachableStage.RESET: HandshakeErrorCode.NETWORK,
    UnreachableStage.TLS: HandshakeErrorCode.NETWORK,
}


def test_the_tables_cover_every_kind_and_stage() -> None:
    assert set(CODE_BY_KIND) | {FailureKind.UNREACHABLE} == set(FailureKind)
    assert set(CODE_BY_STAGE) == set(STAGES)


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: str(s))
@pytest.mark.parametrize("kind", list(FailureKind), ids=lambda k: str(k))
def test_handshake_error_code_for_every_kind_and_stage(
    kind: FailureKind, stage: UnreachableStage | None
) -> None:
    failure = Failure(kind, detail="d", status=500, deadline_ms=5000, stage=stage)
    expected = CODE_BY_STAGE[stage] if kind is FailureKind.UNREACHABLE else CODE_BY_KIND[kind]
    assert failure.handshake_error_code is expected


@pytest.mark.parametrize(
    ("failure", "code"),
    [
        (Failure.unreachable(UnreachableStage.DNS, "ENOTFOUND"), "dns"),
        (Failure.timeout(5000), "timeout"),
        (Failure.http_status(300, ""), "non-2xx"),
        (Failure.http_status(404, "Not Found"), "non-2xx"),
        (Failure.http_status(503, ""), "non-2xx"),
        (Failure.invalid_json("Unexpected token '<' in JSON at position 0"), "non-json"),
        (Failure.validation("Validation failed: body: expected an object, got null"), "non-json"),
        (Failure.validation("Validation failed: body: expected an object, got array"), "non-json"),
        (Failure.unreachable(UnreachableStage.CONNECT, "ECONNREFUSED"), "network"),
        (Failure.unreachable(UnreachableStage.RESET, "ECONNRESET"), "network"),
        (Failure.unreachable(UnreachableStage.TLS, "bad certificate"), "network"),
        (Failure.refused("10.0.0.5 is a private address"), "network"),
    ],
)
def test_seed_handshake_failures(failure: Failure, code: str) -> None:
    assert failure.handshake_error_code == code


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        (Failure.timeout(30_000).reason, CallFailure.TIMEOUT),
        (Failure.http_status(302, "moved").reason, CallFailure.NON_2XX),
        (Failure.http_status(503, "").reason, CallFailure.NON_2XX),
        (Failure.invalid_json("Unexpected token < in JSON at position 0").reason, "invalid-json"),
        (Failure.invalid_json("Unexpected end of JSON input").reason, CallFailure.INVALID_JSON),
        (Failure.validation("Validation failed: Missing execution").reason, CallFailure.SCHEMA),
        ("Validation failed: output: expected an object", CallFailure.SCHEMA),
        (Failure.too_large().reason, CallFailure.TOO_LARGE),
        (Failure.unreachable(UnreachableStage.TLS, "bad cert").reason, CallFailure.UNREACHABLE),
        (Failure.unreachable(UnreachableStage.DNS, "no name").reason, CallFailure.UNREACHABLE),
        (Failure.refused("169.254.169.254 is link-local").reason, CallFailure.EGRESS_REFUSED),
        ("Invalid task completion signature", CallFailure.SIGNATURE),
        ("platform fault: the task was not sent within its 3000ms deadline", "platform-fault"),
        (
            "platform fault: the task's answer was not recorded (its sender stopped)",
            CallFailure.PLATFORM_FAULT,
        ),
        ("something new", CallFailure.OTHER),
        ("", CallFailure.OTHER),
        (None, CallFailure.OTHER),
    ],
)
def test_every_reason_line_has_its_kind_for_the_operator(
    reason: str | None, kind: CallFailure
) -> None:
    assert CallFailure.of(reason) == kind


def test_every_kind_of_failure_in_the_table_has_an_operator_kind() -> None:
    samples = {
        FailureKind.HTTP_STATUS: Failure.http_status(500, "x"),
        FailureKind.TIMEOUT: Failure.timeout(1),
        FailureKind.INVALID_JSON: Failure.invalid_json("Unexpected token x in JSON at position 1"),
        FailureKind.VALIDATION: Failure.validation("Validation failed: Missing a"),
        FailureKind.TOO_LARGE: Failure.too_large(),
        FailureKind.UNREACHABLE: Failure.unreachable(UnreachableStage.RESET, "reset"),
        FailureKind.REFUSED: Failure.refused("private"),
    }
    assert set(samples) == set(FailureKind)
    assert CallFailure.OTHER not in {CallFailure.of(f.reason) for f in samples.values()}
