"""The tables. Times are unix seconds (float) from the one clock; ids are UUIDv7 strings."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import JSON, BigInteger, Boolean, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = ["Agent", "AgentEvent", "Base", "Meta", "Owner"]

_ID = String(36)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON}


class Meta(Base):
    """Small platform facts, such as the admin token's hash."""

    __tablename__ = "meta"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class Owner(Base):
    __tablename__ = "owners"

    id: Mapped[str] = mapped_column(_ID, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[float] = mapped_column(Float)


class Agent(Base):
    """An edgearena agent or a cage fighter: one registered entrant of one owner."""

    __tablename__ = "agents"

    id: Mapped[str] = mapped_column(_ID, primary_key=True)
    owner_id: Mapped[str] = mapped_column(_ID, ForeignKey("owners.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    arena: Mapped[str] = mapped_column(String(16))  # edgearena | cage
    role: Mapped[str | None] = mapped_column(String(16))  # SCOUT | BUILDER | ANALYST
    entrant_type: Mapped[str | None] = mapped_column(String(16))  # harness | model | house
    fighter_class: Mapped[str | None] = mapped_column(String(32))
    endpoint_url: Mapped[str | None] = mapped_column(Text)
    harness_name: Mapped[str | None] = mapped_column(String(200))
    sandbox_attested: Mapped[bool] = mapped_column(Boolean, default=False)
    provider: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # {base_url, model}
    provider_key_sealed: Mapped[str | None] = mapped_column(Text)
    key_sealed: Mapped[str | None] = mapped_column(Text)
    claim_code_hash: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))
    paused_from: Mapped[str | None] = mapped_column(String(16))
    consecutive_failures: Mapped[int] = mapped_column(Integer, default=0)
    cooldown_until: Mapped[float | None] = mapped_column(Float)
    last_heartbeat: Mapped[float | None] = mapped_column(Float)
    hold: Mapped[bool] = mapped_column(Boolean, default=False)
    next_ping_at: Mapped[float | None] = mapped_column(Float)
    reputation: Mapped[float] = mapped_column(Float, default=0.0)
    wizard_passed_at: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)

    __table_args__ = (
        Index("ix_agents_owner", "owner_id"),
        Index("ix_agents_next_ping", "next_ping_at"),
        Index("ix_agents_arena_role_status", "arena", "role", "status"),
    )


class AgentEvent(Base):
    """Append-only history: every ping, wizard check, dispatch and status change."""

    __tablename__ = "agent_events"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    agent_id: Mapped[str] = mapped_column(_ID, ForeignKey("agents.id", ondelete="CASCADE"))
    at: Mapped[float] = mapped_column(Float)
    kind: Mapped[str] = mapped_column(String(32))  # ping, probe, wizard, verify, status, ...
    outcome: Mapped[str] = mapped_column(String(32))  # success, failure, or the new status
    latency_ms: Mapped[float | None] = mapped_column(Float)
    reason: Mapped[str | None] = mapped_column(Text)
    detail: Mapped[dict[str, Any] | None] = mapped_column(JSON)

    __table_args__ = (Index("ix_agent_events_agent_at", "agent_id", "at"),)
