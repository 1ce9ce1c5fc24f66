"""HMAC signatures of edgearena-v1, both directions.

The signed material is ``f"{timestamp}\\n{host}{pathname}\\n"`` followed by the raw
body bytes, keyed with the agent's API key. ``host`` and ``pathname`` are what a
browser's ``URL`` gives (see :mod:`palaestra.protocol.urls`), which is also what
the platform sends: the ``Host`` header and the request's path without its query.
The scheme, query and fragment are not covered.

:func:`hmac_signer` is the one signer every sender uses (run dispatches, the
registration wizard, ``palaestra check``): a key, a clock and a task id make,
for a URL and a raw body, the headers of :data:`SIGNED_HEADERS`, the one list.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Final, Protocol

from palaestra.errors import SignatureError
from palaestra.protocol.urls import wire_url

__all__ = [
    "REPLAY_WINDOW_SECONDS",
    "SIGNATURE_HEADER",
    "SIGNED_HEADERS",
    "TASK_ID_HEADER",
    "TIMESTAMP_HEADER",
    "SignatureProblem",
    "SignedHeaders",
    "VerificationFailed",
    "WallClock",
    "hmac_signer",
    "normalized_signature",
    "sign",
    "signature_target",
    "signed_headers",
    "verify",
]

SIGNATURE_HEADER = "x-edgearena-signature"
TIMESTAMP_HEADER = "x-edgearena-timestamp"
TASK_ID_HEADER = "x-edgearena-task-id"
#: The headers a signed request carries, in the order they are sent: the one list of them.
SIGNED_HEADERS: Final = (SIGNATURE_HEADER, TIMESTAMP_HEADER, TASK_ID_HEADER)
REPLAY_WINDOW_SECONDS = 300
_PREFIX = "sha256="


class SignatureProblem(StrEnum):
    """Why a signature was not accepted."""

    MISSING_TIMESTAMP = "missing-timestamp"
    STALE_TIMESTAMP = "stale-timestamp"
    MISSING_SIGNATURE = "missing-signature"
    BAD_SIGNATURE = "bad-signature"


class VerificationFailed(SignatureError):
    """Invalid signature."""

    def __init__(self, problem: SignatureProblem, message: str, skew: int | None = None) -> None:
        super().__init__(message)
        self.problem = problem
        self.skew = skew


def signature_target(url: str) -> str:
    """The ``host+pathname`` part of the signed material for ``url``, as it is sent.

    Raises :class:`SignatureError` for a URL a browser would not parse.
    """
    parsed = wire_url(url)
    return parsed.host + parsed.pathname


def sign(key: str, timestamp: int, target: str, body: bytes) -> str:
    """The ``x-edgearena-signature`` value: ``sha256=<hex>``."""
    material = f"{timestamp}\n{target}\n".encode() + body
    return _PREFIX + hmac.new(key.encode(), material, hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True)
class SignedHeaders:
    """The headers of a signed request."""

    signature: str
    timestamp: int
    task_id: str | None = None

    def as_dict(self) -> dict[str, str]:
        """The headers by name, in the order of :data:`SIGNED_HEADERS` (no task id header
        without a task id)."""
        values = (self.signature, str(self.timestamp), self.task_id)
        return {
            name: value
            for name, value in zip(SIGNED_HEADERS, values, strict=True)
            if value is not None
        }


def signed_headers(
    key: str, url: str, body: bytes, timestamp: int, task_id: str | None = None
) -> SignedHeaders:
    """Sign ``body`` for a POST to ``url`` at ``timestamp`` (unix seconds)."""
    return SignedHeaders(sign(key, timestamp, signature_target(url), body), timestamp, task_id)


class WallClock(Protocol):
    """What a signer reads the time from (``palaestra.clock.Clock`` is one)."""

    def now(self) -> float: ...


def hmac_signer(
    key: str, clock: WallClock, task_id: str | None = None
) -> Callable[[str, bytes], dict[str, str]]:
    """The signer of edgearena-v1 requests with ``key``: for a URL and the raw body about to
    be POSTed there, the signed headers (:meth:`SignedHeaders.as_dict`), stamped with
    ``clock`` at that moment. The key stays inside the signer (no repr shows it)."""

    def sign_request(url: str, body: bytes) -> dict[str, str]:
        stamp = int(clock.now())
        return SignedHeaders(sign(key, stamp, _target(url), body), stamp, task_id).as_dict()

    return sign_request


@lru_cache(maxsize=4096)
def _target(url: str) -> str:
    """:func:`signature_target`, worked out once per endpoint rather than per request."""
    return signature_target(url)


def verify(
    key: str,
    target: str,
    body: bytes,
    signature: str | None,
    timestamp: str | None,
    now: float,
    window: int = REPLAY_WINDOW_SECONDS,
) -> int:
    """Check a signed request; return its timestamp or raise :class:`VerificationFailed`.

    ``target`` is the receiver's own ``host+pathname`` (see :func:`signature_target`),
    ``now`` the receiver's clock. The comparison is constant-time and ignores case
    (see :func:`normalized_signature`).
    """
    stamp = _parse_timestamp(timestamp)
    skew = math.floor(now) - stamp
    if abs(skew) > window:
        raise VerificationFailed(
            SignatureProblem.STALE_TIMESTAMP,
            f"Signature timestamp outside ±{window}s replay window (skew={skew}s)",
            skew=skew,
        )
    if not signature:
        raise VerificationFailed(SignatureProblem.MISSING_SIGNATURE, "Missing signature")
    expected = sign(key, stamp, target, body).encode()
    received = normalized_signature(signature).encode("utf-8", "replace")
    if not hmac.compare_digest(expected, received):
        raise VerificationFailed(SignatureProblem.BAD_SIGNATURE, "Invalid signature")
    return stamp


def normalized_signature(value: str) -> str:
    """A received ``x-edgearena-signature`` in the form :func:`sign` writes: trimmed and
    lower-cased, the ``sha256=`` label included.

    Upper- and lower-case hex digits spell the same digest, and ``SHA256=`` names the
    same algorithm, so neither says anything about the key: an agent whose library
    writes capitals is accepted. A receiver that remembers signatures (to refuse
    replays) remembers this form, so a digest re-sent in other capitals is the same one.
    """
    return value.strip().lower()


def _parse_timestamp(value: str | None) -> int:
    text = (value or "").strip()
    if not text.isascii() or not text.isdigit() or len(text) > 12:
        raise VerificationFailed(
            SignatureProblem.MISSING_TIMESTAMP,
            "Invalid or missing X-EdgeArena-Timestamp header",
        )
    return int(text)
