"""The wire of edgearena-v1 and cage.v1, pure: messages, signatures, schemas, failures.

No I/O and no clock reads: time is always passed in. The platform and the
agent SDK both use this package, so the two can never disagree.
"""

from palaestra.protocol.cage import (
    ChallengeReply,
    ChallengeRequest,
    Side,
    TurnReply,
    TurnRequest,
    challenge_problem,
    idempotency_key,
    parse_cage_request,
    turn_problem,
)
from palaestra.protocol.constants import (
    CAGE_RULESET,
    PROTOCOL,
    RESPONSE_CAP_BYTES,
    Phase,
    Role,
    UserAgent,
)
from palaestra.protocol.edgearena import (
    AnalystSimulation,
    BuildSimulation,
    ChatMessage,
    CompletionBody,
    DispatchPayload,
    DispatchReply,
    HandshakeRequest,
    ScoutSimulation,
    SimulationCandidate,
    answers_later,
    parse_agent_request,
)
from palaestra.protocol.failures import Failure, FailureKind, HandshakeErrorCode, UnreachableStage
from palaestra.protocol.jsonwire import InvalidJson, dumps, loads
from palaestra.protocol.models import InvalidMessage
from palaestra.protocol.schemas import (
    Envelope,
    SchemaViolation,
    Violation,
    check_required_keys,
    validate_envelope,
    validate_output,
)
from palaestra.protocol.signing import (
    SIGNATURE_HEADER,
    TASK_ID_HEADER,
    TIMESTAMP_HEADER,
    SignatureProblem,
    SignedHeaders,
    VerificationFailed,
    sign,
    signature_target,
    signed_headers,
    verify,
)

__all__ = [
    "CAGE_RULESET",
    "PROTOCOL",
    "RESPONSE_CAP_BYTES",
    "SIGNATURE_HEADER",
    "TASK_ID_HEADER",
    "TIMESTAMP_HEADER",
    "AnalystSimulation",
    "BuildSimulation",
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
    "Phase",
    "Role",
    "SchemaViolation",
    "ScoutSimulation",
    "Side",
    "SignatureProblem",
    "SignedHeaders",
    "SimulationCandidate",
    "TurnReply",
    "TurnRequest",
    "UnreachableStage",
    "UserAgent",
    "VerificationFailed",
    "Violation",
    "answers_later",
    "challenge_problem",
    "check_required_keys",
    "dumps",
    "idempotency_key",
    "loads",
    "parse_agent_request",
    "parse_cage_request",
    "sign",
    "signature_target",
    "signed_headers",
    "turn_problem",
    "validate_envelope",
    "validate_output",
    "verify",
]
