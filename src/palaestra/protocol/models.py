"""Shared base for the wire models: strict types, extra keys kept, one error type."""

from __future__ import annotations

from typing import Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from palaestra.errors import ProtocolError

__all__ = ["InvalidMessage", "WireModel"]


class InvalidMessage(ProtocolError):
    """Validation failed: the message does not have the protocol's shape."""


class WireModel(BaseModel):
    """A protocol message. Types are strict; unknown keys are allowed and kept."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True, populate_by_name=True)

    @classmethod
    def parse(cls, value: Any) -> Self:
        """Validate a parsed JSON value; raise :class:`InvalidMessage` on any mismatch."""
        try:
            return cls.model_validate(value)
        except ValidationError as exc:
            raise InvalidMessage(describe(exc)) from None

    def wire(self) -> dict[str, Any]:
        """The message as a JSON-ready dict, with the protocol's key names."""
        return self.model_dump(mode="json", by_alias=True)

    @model_serializer(mode="wrap")
    def _omit_absent_optionals(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # An optional key left empty is absent on the wire, as in the seeds, not ``null``.
        data: dict[str, Any] = handler(self)
        for name, field in type(self).model_fields.items():
            if not field.is_required() and field.default is None and getattr(self, name) is None:
                data.pop(name, None)
                if field.alias is not None:
                    data.pop(field.alias, None)
        return data


def describe(exc: ValidationError) -> str:
    """The first error of a pydantic validation, in the project's reason format."""
    error = exc.errors(include_url=False)[0]
    path = ""
    for part in error["loc"]:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    if error["type"] == "missing":
        return f"Validation failed: Missing {path}"
    return f"Validation failed: {path or 'body'}: {error['msg']}"
