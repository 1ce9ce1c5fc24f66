"""A batch of played turns recorded in one PostgreSQL statement.

Recording a batch reads each turn's lease and writes three things for the turns still
held: the turn's move and findings, its match moved on, and the match's next turn when it
goes on. Through SQLAlchemy that is a transaction of five round trips to the server (its
``BEGIN`` and ``COMMIT`` included); here it is one statement, run on its own
(``Database.transact(single=True)``: the statement is its transaction), whose rows come as
arrays (``unnest``), so that its text is the same for any batch and is prepared once per
connection.

The statement locks each match and its current turn, in match id order as claims lock the
matches (so the two never deadlock), and keeps the rows whose lease it finds: a turn that
another worker recorded or took over meanwhile is read as that worker left it, once it
commits, and is written nothing. It returns the turns it recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import text
from sqlalchemy.engine import Connection

from palaestra.rules.cage.matchflow import TurnStatus
from palaestra.store.bulk import json_text

__all__ = ["record_held"]

#: Each array and its element type, by the name of its bound parameter.
_ARRAYS: Final = {
    "t_match": "TEXT",
    "t_turn": "INTEGER",
    "t_lease": "FLOAT8",
    "t_status": "TEXT",
    "t_message": "TEXT",
    "t_reason": "TEXT",
    "t_latency": "FLOAT8",
    "t_findings": "TEXT",
    "t_producer": "TEXT",
    "t_model": "TEXT",
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


_RUNNING: Final = TurnStatus.RUNNING.value
_RECORD: Final = text(
    f"""
    WITH held AS (
        SELECT turns.match_id, turns.turn, turns.started_at
        FROM matches JOIN turns
            ON turns.match_id = matches.id AND turns.turn = matches.next_turn
        WHERE matches.id = ANY(CAST(:t_match AS TEXT[])) AND turns.status = '{_RUNNING}'
        ORDER BY matches.id
        FOR UPDATE OF matches, turns
    ), ok AS (
        SELECT v.* FROM {_unnest("t_", "m_")}
        JOIN held
            ON held.match_id = v.t_match AND held.turn = v.t_turn
            AND held.started_at = v.t_lease
    ), recorded AS (
        UPDATE turns SET status = ok.t_status, message = ok.t_message, reason = ok.t_reason,
            latency_ms = ok.t_latency, findings = CAST(ok.t_findings AS JSON),
            producer = ok.t_producer, model_id = ok.t_model, finished_at = :now
        FROM ok
        WHERE turns.match_id = ok.t_match AND turns.turn = ok.t_turn
    ), moved AS (
        UPDATE matches SET status = ok.m_status, next_turn = ok.m_next,
            outcome = ok.m_outcome, decided_by = ok.m_decided, void_reason = ok.m_void,
            finished_at = ok.m_finished, updated_at = :now
        FROM ok
        WHERE matches.id = ok.t_match
    ), opened AS (
        INSERT INTO turns (match_id, turn, side, fighter_id, status, payload, findings,
            started_at)
        SELECT n_match, n_turn, n_side, n_fighter, n_status, n_payload,
            CAST(n_findings AS JSON), n_started
        FROM {_unnest("n_")}
        JOIN ok ON ok.t_match = v.n_match
    )
    SELECT t_match, t_turn FROM ok
    """  # noqa: S608 - the text is constant; every value is bound
)


def _columns(rows: Sequence[dict[str, Any]], keys: Sequence[str]) -> list[list[Any]]:
    return [[row[key] for row in rows] for key in keys]


def record_held(
    connection: Connection,
    turns: Sequence[dict[str, Any]],
    matches: Sequence[dict[str, Any]],
    following: Sequence[dict[str, Any]],
    now: float,
) -> set[tuple[str, int]]:
    """Record each of ``turns`` (the values ``records`` builds, by ``b_match`` and
    ``b_turn``, with the ``lease`` the claim wrote) whose lease still holds, move its match
    on (``matches``, one a turn, in the same order) and insert its next turn if
    ``following`` has one (at most one a match); return the turns recorded. At most one of
    ``turns`` a match."""
    keys = ("b_match", "b_turn", "lease", "status", "message", "reason", "latency_ms")
    recorded = _columns(turns, keys)
    recorded.append([json_text(turn["findings"]) for turn in turns])
    recorded.extend(_columns(turns, ("producer", "model_id")))
    moved = _columns(
        matches, ("status", "next_turn", "outcome", "decided_by", "void_reason", "finished_at")
    )
    opened = _columns(following, ("match_id", "turn", "side", "fighter_id", "status", "payload"))
    opened.append([json_text(row["findings"]) for row in following])
    opened.append([row["started_at"] for row in following])
    values = dict(zip(_ARRAYS, [*recorded, *moved, *opened], strict=True))
    rows = connection.execute(_RECORD, {"now": now, **values})
    return {(row.t_match, row.t_turn) for row in rows}
