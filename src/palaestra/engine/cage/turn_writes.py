"""A batch of recorded turns written in one PostgreSQL statement.

Recording a batch writes three things: each turn's move and findings, its match moved on,
and the next turns of the matches that go on. Through SQLAlchemy that is three
executemanys, each a round trip to the server; here it is one statement whose rows come
as arrays (``unnest``), so its text is the same for any batch and is prepared once per
connection. The caller has locked the matches and turns (:mod:`.records`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import text
from sqlalchemy.engine import Connection

from palaestra.store.bulk import json_text

__all__ = ["write_turns"]

#: Each array and its element type, by the name of its bound parameter.
_ARRAYS: Final = {
    "t_match": "TEXT",
    "t_turn": "INTEGER",
    "t_status": "TEXT",
    "t_message": "TEXT",
    "t_reason": "TEXT",
    "t_latency": "FLOAT8",
    "t_findings": "TEXT",
    "m_status": "TEXT",
    "m_next": "INTEGER",
    "m_outcome": "TEXT",
    "m_decided": "TEXT",
    "m_void": "TEXT",
    "m_finished": "FLOAT8",
    "n_match": "TEXT",
    "n_turn": "INTEGER",
    "n_side": "TEXT",
    "n_fighter": "TEXT",
    "n_status": "TEXT",
    "n_payload": "TEXT",
    "n_findings": "TEXT",
    "n_started": "FLOAT8",
}


def _unnest(*prefixes: str) -> str:
    """The arrays whose names start with one of ``prefixes``, as the rows of a table ``v``."""
    names = [name for name in _ARRAYS if name.startswith(prefixes)]
    arrays = ", ".join(f"CAST(:{name} AS {_ARRAYS[name]}[])" for name in names)
    return f"unnest({arrays}) AS v({', '.join(names)})"


_WRITE: Final = text(
    f"""
    WITH recorded AS (
        UPDATE turns SET status = v.t_status, message = v.t_message, reason = v.t_reason,
            latency_ms = v.t_latency, findings = CAST(v.t_findings AS JSON), finished_at = :now
        FROM {_unnest("t_")}
        WHERE turns.match_id = v.t_match AND turns.turn = v.t_turn
    ), opened AS (
        INSERT INTO turns (match_id, turn, side, fighter_id, status, payload, findings,
            started_at)
        SELECT n_match, n_turn, n_side, n_fighter, n_status, n_payload,
            CAST(n_findings AS JSON), n_started
        FROM {_unnest("n_")}
    )
    UPDATE matches SET status = v.m_status, next_turn = v.m_next, outcome = v.m_outcome,
        decided_by = v.m_decided, void_reason = v.m_void, finished_at = v.m_finished,
        updated_at = :now
    FROM {_unnest("t_match", "m_")}
    WHERE matches.id = v.t_match
    """  # noqa: S608 - the text is constant; every value is bound
)


def _columns(rows: Sequence[dict[str, Any]], keys: Sequence[str]) -> list[list[Any]]:
    return [[row[key] for row in rows] for key in keys]


def write_turns(
    connection: Connection,
    turns: Sequence[dict[str, Any]],
    matches: Sequence[dict[str, Any]],
    following: Sequence[dict[str, Any]],
    now: float,
) -> None:
    """Store ``turns`` (the values :mod:`.records` builds, by ``b_match`` and ``b_turn``),
    ``matches`` (one a turn, in the same order) and insert ``following``."""
    if not turns and not following:
        return
    recorded = _columns(turns, ("b_match", "b_turn", "status", "message", "reason", "latency_ms"))
    recorded.append([json_text(turn["findings"]) for turn in turns])
    moved = _columns(
        matches, ("status", "next_turn", "outcome", "decided_by", "void_reason", "finished_at")
    )
    opened = _columns(following, ("match_id", "turn", "side", "fighter_id", "status", "payload"))
    opened.append([json_text(row["findings"]) for row in following])
    opened.append([row["started_at"] for row in following])
    values = [*recorded, *moved, *opened]
    connection.execute(_WRITE, {"now": now, **dict(zip(_ARRAYS, values, strict=True))})
