"""What went wrong with a call to an agent, and the one line the owner is shown.

The reason lines are exactly those of ``spec/SCHEMAS.md``; the handshake's
``errorCode`` comes from the same classification so the two never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from palaestra.protocol.constants import RESPONSE_CAP_BYTES

__all__ = [
    "CallFailure",
    "Failure",
    "FailureKind",
    "HandshakeErrorCode",
    "UnreachableStage",
]


class FailureKind(StrEnum):
    """The classes of failure in the spec's failure table."""

    HTTP_STATUS = "http-status"
    TIMEOUT = "timeout"
    INVALID_JSON = "invalid-json"
    VALIDATION = "validation"
    TOO_LARGE = "too-large"
    UNREACHABLE = "unreachable"
    REFUSED = "refused"


class CallFailure(StrEnum):
    """How a call to an agent failed, as an operator counts it: ``/metrics`` and the agent's
    page split failures by these, from the reason line every failure is recorded with."""

    TIMEOUT = "timeout"
    NON_2XX = "non-2xx"
    INVALID_JSON = "invalid-json"
    SCHEMA = "schema"
    TOO_LARGE = "too-large"
    UNREACHABLE = "unreachable"
    EGRESS_REFUSED = "egress-refused"
    #: An async completion whose signature did not verify (refused, charged to no agent).
    SIGNATURE = "signature"
    #: The platform's own fault (a task not sent in time, a lost sender): voided, not charged.
    PLATFORM_FAULT = "platform-fault"
    OTHER = "other"

    @classmethod
    def of(cls, reason: str | None) -> CallFailure:
        """The kind of the failure ``reason`` (a line of ``spec/SCHEMAS.md``, or the
        platform's own) says."""
        text = reason or ""
        for prefix, kind in REASON_PREFIXES:
            if text.startswith(prefix):
                return kind
        return cls.OTHER


REASON_PREFIXES: tuple[tuple[str, CallFailure], ...] = (
    ("External agent timed out after ", CallFailure.TIMEOUT),
    ("External agent responded with ", CallFailure.NON_2XX),
    ("Unexpected token ", CallFailure.INVALID_JSON),
    ("Unexpected end of JSON input", CallFailure.INVALID_JSON),
    ("Validation failed", CallFailure.SCHEMA),
    ("External agent response exceeded ", CallFailure.TOO_LARGE),
    ("External agent unreachable: ", CallFailure.UNREACHABLE),
    ("Endpoint refused by egress policy", CallFailure.EGRESS_REFUSED),
    ("Invalid task completion signature", CallFailure.SIGNATURE),
    ("platform fault", CallFailure.PLATFORM_FAULT),
)


class UnreachableStage(StrEnum):
    """Where an unreachable endpoint failed."""

    DNS = "dns"
    CONNECT = "connect"
    RESET = "reset"
    TLS = "tls"


class HandshakeErrorCode(StrEnum):
    """The seed's handshake ``errorCode`` values."""

    DNS = "dns"
    TIMEOUT = "timeout"
    NON_2XX = "non-2xx"
    NON_JSON = "non-json"
    NETWORK = "network"


@dataclass(frozen=True, slots=True)
class Failure:
    """A classified failure. Build one with the class methods; read ``reason``."""

    kind: FailureKind
    detail: str = ""
    status: int | None = None
    deadline_ms: int | None = None
    stage: UnreachableStage | None = None
    limit: int | None = None  # a too-large reply's cap, when not the usual one

    @classmethod
    def http_status(cls, status: int, body: str) -> Failure:
        return cls(FailureKind.HTTP_STATUS, detail=body[:200], status=status)

    @classmethod
    def timeout(cls, deadline_ms: int) -> Failure:
        return cls(FailureKind.TIMEOUT, deadline_ms=deadline_ms)

    @classmethod
    def invalid_json(cls, message: str) -> Failure:
        """``message`` is the JavaScript-style parse error (see ``jsonwire``)."""
        return cls(FailureKind.INVALID_JSON, detail=message)

    @classmethod
    def validation(cls, reason: str) -> Failure:
        """``reason`` is a full ``Validation failed: ...`` line."""
        return cls(FailureKind.VALIDATION, detail=reason)

    @classmethod
    def too_large(cls, status: int | None = None, limit: int | None = None) -> Failure:
        """A reply past the cap (``limit`` bytes, :data:`RESPONSE_CAP_BYTES` unless given),
        after a head with ``status``: it was reached and answered."""
        return cls(FailureKind.TOO_LARGE, status=status, limit=limit)

    @classmethod
    def unreachable(cls, stage: UnreachableStage, detail: str) -> Failure:
        return cls(FailureKind.UNREACHABLE, detail=detail, stage=stage)

    @classmethod
    def refused(cls, why: str) -> Failure:
        return cls(FailureKind.REFUSED, detail=why)

    @property
    def reason(self) -> str:
        """The failure line recorded and shown to the owner."""
        match self.kind:
            case FailureKind.HTTP_STATUS:
                return f"External agent responded with {self.status}: {self.detail}"
            case FailureKind.TIMEOUT:
                return f"External agent timed out after {self.deadline_ms}ms"
            case FailureKind.INVALID_JSON | FailureKind.VALIDATION:
                return self.detail
            case FailureKind.TOO_LARGE:
                return f"External agent response exceeded {self.limit or RESPONSE_CAP_BYTES} bytes"
            case FailureKind.UNREACHABLE:
                stage = self.stage or UnreachableStage.CONNECT
                return f"External agent unreachable: {stage}: {self.detail}"
            case FailureKind.REFUSED:
                return f"Endpoint refused by egress policy: {self.detail}"

    @property
    def handshake_error_code(self) -> HandshakeErrorCode:
        """The seed's ``errorCode`` for this failure at the handshake step."""
        match self.kind:
            case FailureKind.TIMEOUT:
                return HandshakeErrorCode.TIMEOUT
            case FailureKind.HTTP_STATUS:
                return HandshakeErrorCode.NON_2XX
            case FailureKind.INVALID_JSON | FailureKind.VALIDATION | FailureKind.TOO_LARGE:
                return HandshakeErrorCode.NON_JSON
            case FailureKind.UNREACHABLE if self.stage is UnreachableStage.DNS:
                return HandshakeErrorCode.DNS
            case _:
                return HandshakeErrorCode.NETWORK
