"""Retention of browser sessions: an expired one signs nobody in, so it is deleted, with
nothing archived, a batch per transaction through ``ix_web_sessions_expires``."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, delete, select

from palaestra.engine.history.passes import RetentionPass
from palaestra.store.models import WebSession

__all__ = ["delete_expired_sessions"]


async def delete_expired_sessions(p: RetentionPass, cut: float) -> None:
    """Delete the browser sessions that expired before ``cut``, a batch per transaction."""
    while True:
        expired = (
            select(WebSession.id_hash)
            .where(WebSession.expires_at < cut)
            .limit(p.batch)
            .scalar_subquery()
        )

        def work(connection: Connection, expired: Any = expired) -> int:
            gone = connection.execute(delete(WebSession).where(WebSession.id_hash.in_(expired)))
            return int(gone.rowcount)

        deleted = await p.platform.db.transact(work)
        p.report.web_sessions_deleted += deleted
        if deleted < p.batch:
            return
        await p.pause()
