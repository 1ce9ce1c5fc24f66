"""Identifiers. The protocols require UUIDv7 for tasks, runs, candidates and requests."""

from __future__ import annotations

import uuid_utils

__all__ = ["new_id"]


def new_id() -> str:
    """A new UUIDv7, as its canonical lowercase string."""
    return str(uuid_utils.uuid7())
