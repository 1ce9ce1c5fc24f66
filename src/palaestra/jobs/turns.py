"""``play_turn`` and ``play_pending``: cage.v1 matches, a turn at a time.

``play_turn`` is ``referee.play_match`` from the match's next turn on (each
turn's row is its lease, and each turn's record claims the next); the turns a
worker plays at once are claimed and recorded in batches (``TurnDesk``).
``play_pending`` kicks every match not started (an API process created one).
In one process the referee's own loop plays every open match instead.
"""

from __future__ import annotations

from palaestra.engine.cage.referee import Step, play_match
from palaestra.errors import NotFound
from palaestra.jobs import sweeper
from palaestra.jobs.context import EmbeddedWork, WorkerWork

__all__ = ["play_pending", "play_turn", "referee"]


async def play_turn(work: WorkerWork, match_id: str) -> str:
    """Play ``match_id`` as far as it goes now; the step it stopped at."""
    try:
        result = await play_match(work.platform, match_id, work.turns)
    except NotFound:
        return Step.FINISHED.value  # deleted meanwhile
    # BUSY: another worker holds the turn; if it dies, the sweeper re-kicks the match
    # once the turn's lease has run out.
    return result.step.value


async def play_pending(work: WorkerWork) -> int:
    """Kick every match that has not started; how many."""
    ids = await sweeper.pending_matches(work.platform)
    for match_id in ids:
        await work.kicks.kick_turn(match_id)
    return len(ids)


async def referee(work: EmbeddedWork) -> None:
    """The embedded server's form of ``play_turn``: the referee's loop, until ``work.stop``."""
    await work.referee.run(work.stop)
