"""A failed call's exception as one of the failure reasons of ``spec/SCHEMAS.md``."""

from __future__ import annotations

import ssl
import zlib

import aiohttp

from palaestra.errors import EgressRefused
from palaestra.protocol.failures import Failure, UnreachableStage

from .wire import PeerError

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
    """The failure a transport error (DNS, connect, TLS, reset, bad compression) stands for."""
    if isinstance(exc, PeerError):
        return exc.failure
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return Failure.unreachable(UnreachableStage.DNS, _os_detail(exc.os_error))
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return Failure.unreachable(UnreachableStage.TLS, str(exc.certificate_error))
    if isinstance(exc, aiohttp.ClientConnectorSSLError | aiohttp.ClientSSLError | ssl.SSLError):
        return Failure.unreachable(UnreachableStage.TLS, _os_detail(exc))
    if isinstance(exc, aiohttp.ClientConnectorError):
        return Failure.unreachable(UnreachableStage.CONNECT, _os_detail(exc.os_error))
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return Failure.unreachable(UnreachableStage.RESET, "server disconnected")
    if isinstance(exc, aiohttp.InvalidURL):
        return Failure.refused(f"invalid URL: {exc}")
    if isinstance(exc, UnicodeError):
        return Failure.refused(f"invalid URL: {exc}")
    if isinstance(exc, zlib.error):
        return Failure.unreachable(UnreachableStage.RESET, f"corrupt compressed body: {exc}")
    return Failure.unreachable(UnreachableStage.RESET, _os_detail(exc))


def _os_detail(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc)
    return text or type(exc).__name__
