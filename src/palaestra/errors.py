"""The project's exceptions: one root, small subclasses whose docstring is their message."""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "Conflict",
    "EgressRefused",
    "EntrantMisconfigured",
    "Forbidden",
    "InvalidRequest",
    "InvalidUrl",
    "NotFound",
    "PalaestraError",
    "ProtocolError",
    "SignatureError",
    "StoreClosed",
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


class Forbidden(PalaestraError):
    """Not allowed."""

    code = "forbidden"


class InvalidRequest(PalaestraError):
    """The request is invalid."""

    code = "invalid-request"


class InvalidUrl(InvalidRequest):
    """The URL is not valid."""

    code = "invalid-url"


class Conflict(PalaestraError):
    """The request conflicts with the current state."""

    code = "conflict"
