"""``matchmake``: one round of the matchmaker, the same in both modes.

Each match it makes is created as the arena (``through_referee``) and its
first turn kicked: a ``play_turn`` job, or in one process a wake of the referee.
"""

from __future__ import annotations

from palaestra.engine.cage.matchmaker import Matchmaker, through_referee
from palaestra.jobs.context import Work

__all__ = ["matchmake"]


async def matchmake(work: Work) -> int:
    """One matchmaking round; how many matches it made."""
    create_as_arena = through_referee(work.platform)

    async def create(attacker_id: str, defender_id: str) -> str:
        match_id = await create_as_arena(attacker_id, defender_id)
        await work.kicks.kick_turn(match_id)
        return match_id

    return len(await Matchmaker(work.platform, create).run_once())
