"""The tables of the ratings: live OpenSkill ratings, the matches applied to them, and the
published leaderboards (``store.models`` re-exports them)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Float, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from palaestra.rules.ratings.live import Skill
from palaestra.store.base import ID, Base, closed_set

__all__ = ["FighterRating", "LeaderboardSnapshot", "RatedMatch"]

_ID = ID


class FighterRating(Base):
    """A cage fighter's live OpenSkill rating on one side; absent until its first rated match."""

    __tablename__ = "fighter_ratings"

    fighter_id: Mapped[str] = mapped_column(
        _ID, ForeignKey("agents.id", ondelete="CASCADE"), primary_key=True
    )
    side: Mapped[Skill] = mapped_column(closed_set(Skill, 8), primary_key=True)
    mu: Mapped[float] = mapped_column(Float)
    sigma: Mapped[float] = mapped_column(Float)
    matches: Mapped[int] = mapped_column(Integer)
    wins: Mapped[int] = mapped_column(Integer)
    draws: Mapped[int] = mapped_column(Integer)
    losses: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[float] = mapped_column(Float)

    # The live table's stamp: the latest write, read without a scan.
    __table_args__ = (Index("ix_fighter_ratings_updated", "updated_at"),)


class RatedMatch(Base):
    """A scored match applied to the live ratings, exactly once, with the ratings it moved."""

    __tablename__ = "rated_matches"

    match_id: Mapped[str] = mapped_column(
        _ID, ForeignKey("matches.id", ondelete="CASCADE"), primary_key=True
    )
    result: Mapped[str | None] = mapped_column(String(16))  # attacker | defender | draw
    attack_mu_before: Mapped[float | None] = mapped_column(Float)
    attack_sigma_before: Mapped[float | None] = mapped_column(Float)
    defence_mu_before: Mapped[float | None] = mapped_column(Float)
    defence_sigma_before: Mapped[float | None] = mapped_column(Float)
    attack_mu_after: Mapped[float | None] = mapped_column(Float)
    attack_sigma_after: Mapped[float | None] = mapped_column(Float)
    defence_mu_after: Mapped[float | None] = mapped_column(Float)
    defence_sigma_after: Mapped[float | None] = mapped_column(Float)
    rated_at: Mapped[float] = mapped_column(Float)


class LeaderboardSnapshot(Base):
    """A published leaderboard of one arena as computed at one time."""

    __tablename__ = "leaderboard_snapshots"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    arena: Mapped[str] = mapped_column(String(16))  # cage | edgearena
    computed_at: Mapped[float] = mapped_column(Float)
    match_count: Mapped[int] = mapped_column(Integer)  # scored matches, or finished tasks
    data: Mapped[dict[str, Any]] = mapped_column(JSON)

    __table_args__ = (Index("ix_leaderboard_snapshots_arena_at", "arena", "computed_at"),)
