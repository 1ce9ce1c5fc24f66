"""The project's exceptions: one root, small subclasses whose docstring is their message."""

from __future__ import annotations

import math

__all__ = [
    "ConfigurationError",
    "Conflict",
    "EgressRefused",
    "EntrantMisconfigured",
    "Forbidden",
    "InvalidClaimCode",
    "InvalidCredential",
    "InvalidRequest",
    "InvalidUrl",
    "NotFound",
    "PalaestraError",
    "ProtocolError",
    "SignatureError",
    "StoreClosed",
    "TooManyRequests",
    "Unauthorized",
]


class PalaestraError(Exception):
    """Palaestra failed."""

    code = "error"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())

    @property
    def message(self) -> str:
        return str(self)


class ProtocolError(PalaestraError):
    """A message does not follow the protocol."""


class SignatureError(ProtocolError):
    """Invalid signature."""


class StoreClosed(PalaestraError):
    """The store is closed."""


class EgressRefused(PalaestraError):
    """The egress policy refuses this destination."""

    def __init__(self, message: str | None = None, *, exact: str | None = None) -> None:
        super().__init__(message)
        #: The refusal naming the address a host name resolved to, when ``message`` withholds
        #: it (the platform's DNS is not its users' to map): for the logs, and for tools run
        #: by the machine's own user.
        self.exact = exact

    @property
    def exact_message(self) -> str:
        return self.exact or self.message


class ConfigurationError(PalaestraError):
    """The configuration is invalid."""


class EntrantMisconfigured(ConfigurationError):
    """The fighter's own configuration cannot play: its owner's to fix."""


class NotFound(PalaestraError):
    """Not found."""

    code = "not-found"


class Unauthorized(PalaestraError):
    """Authentication required."""

    code = "unauthorized"


class InvalidCredential(Unauthorized):
    """Invalid credentials."""


class Forbidden(PalaestraError):
    """Not allowed."""

    code = "forbidden"


class InvalidClaimCode(Forbidden):
    """Invalid or already used claim code."""


class TooManyRequests(PalaestraError):
    """Too many requests: try again later."""

    code = "too-many-requests"

    def __init__(self, message: str | None = None, *, retry_after: float = 1.0) -> None:
        super().__init__(message)
        #: Seconds until a new attempt can succeed (the ``Retry-After`` header, rounded up).
        self.retry_after = max(1, math.ceil(retry_after))


class InvalidRequest(PalaestraError):
    """The request is invalid."""

    code = "invalid-request"


class InvalidUrl(InvalidRequest):
    """The URL is not valid."""

    code = "invalid-url"


class Conflict(PalaestraError):
    """The request conflicts with the current state."""

    code = "conflict"
