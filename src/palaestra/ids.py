"""Identifiers. The protocols require UUIDv7 for tasks, runs, candidates and requests."""

from __future__ import annotations

import uuid_utils

__all__ = ["is_uuid", "new_id"]


def new_id() -> str:
    """A new UUIDv7, as its canonical lowercase string."""
    return str(uuid_utils.uuid7())


def is_uuid(value: object) -> bool:
    """Whether ``value`` is a UUID string in canonical 8-4-4-4-12 form."""
    if not isinstance(value, str) or len(value) != 36:
        return False
    try:
        uuid_utils.UUID(value)
    except ValueError:
        return False
    return True
