"""A failed call's exception as one of the failure reasons of ``spec/SCHEMAS.md``."""

from __future__ import annotations

import ssl
import zlib

import aiohttp

from palaestra.errors import EgressRefused
from palaestra.protocol.failures import Failure, UnreachableStage

from .wire import PeerError, os_detail

__all__ = ["PEER_ERRORS", "classify", "refusal_text"]

#: What calling a peer can raise because of the peer: its name (a label IDNA cannot
#: encode), its address, its TLS, its server, its compression. A call that fails so is
#: the peer's failure; anything else raised while calling it is the arena's own.
PEER_ERRORS: tuple[type[BaseException], ...] = (
    PeerError,
    aiohttp.ClientError,
    OSError,
    ssl.SSLError,
    zlib.error,
    UnicodeError,
)


def refusal_text(exc: Exception) -> str:
    """The reason line of a URL the policy refused or could not read."""
    if isinstance(exc, EgressRefused):
        return exc.message
    return f"invalid URL: {exc}"


def classify(exc: BaseException) -> Failure:
    """The failure an error raised while calling a peer stands for: :mod:`.wire` classifies
    its own (:class:`PeerError`); what else reaches here is a TLS or compression error, a
    host name IDNA cannot encode, or a reset."""
    if isinstance(exc, PeerError):
        return exc.failure
    if isinstance(exc, ssl.SSLError):
        return Failure.unreachable(UnreachableStage.TLS, os_detail(exc))
    if isinstance(exc, UnicodeError):
        return Failure.refused(f"invalid URL: {exc}")
    if isinstance(exc, zlib.error):
        return Failure.unreachable(UnreachableStage.RESET, f"corrupt compressed body: {exc}")
    return Failure.unreachable(UnreachableStage.RESET, os_detail(exc))
