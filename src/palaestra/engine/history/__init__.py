"""History that stays bounded: raw events, tasks' bodies and completion receipts archived to
Parquet, then removed; expired browser sessions deleted.

- ``retention``: the job (:class:`Retention`), one pass at a time;
- ``events``, ``bodies``, ``receipts``, ``sessions``: the kinds of history it bounds;
- ``archive``: the Parquet files, in the dataset's format;
- ``lease``: one runner at a time;
- ``rollups``: the roll-up job, and the watermark retention waits on;
- ``status``: what is kept, what is archived, and when (``palaestra retention``).
"""

from __future__ import annotations

from palaestra.engine.history.archive import read_archive
from palaestra.engine.history.bodies import ArchivedBodies, archived_bodies, task_bodies_archive
from palaestra.engine.history.passes import PassReport
from palaestra.engine.history.retention import Retention, RolledUpUntil, no_roll_up_limit
from palaestra.engine.history.rollups import roll_up_history, summarised_until

__all__ = [
    "ArchivedBodies",
    "PassReport",
    "Retention",
    "RolledUpUntil",
    "archived_bodies",
    "no_roll_up_limit",
    "read_archive",
    "roll_up_history",
    "summarised_until",
    "task_bodies_archive",
]
