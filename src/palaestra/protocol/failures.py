"""What went wrong with a call to an agent, and the one line the owner is shown.

The reason lines are exactly those of ``spec/SCHEMAS.md``; the handshake's
``errorCode`` comes from the same classification so the two never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from palaestra.protocol.constants import RESPONSE_CAP_BYTES

__all__ = [
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
    def too_large(cls) -> Failure:
        return cls(FailureKind.TOO_LARGE)

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
                return f"External agent response exceeded {RESPONSE_CAP_BYTES} bytes"
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
