"""Bodies of the owner-token API: a new token is shown once, in the answer that issues it."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["OwnerTokenIssued", "OwnerTokenRevoked"]


class OwnerTokenIssued(BaseModel):
    owner_id: str
    token: str = Field(description="The owner's new bearer token, shown this once.")
    rotated_at: float = Field(description="When it was issued (Unix seconds).")


class OwnerTokenRevoked(BaseModel):
    owner_id: str
    revoked_at: float = Field(
        description="When the token was revoked (Unix seconds); the first time, if it already was."
    )
