"""Whether the demo plays the local model, and the load it gives it.

With the ``local`` extra installed and on, the good scout, builder and
analyst answer with the model (each in its own process, its own instance),
the house plays it in the cage, and a ``model: local`` fighter plays it
bare. The platform's one instance serves both the house and that fighter,
one generation at a time, so the demo bounds what can queue on it:

- one match is played at a time (the others wait, not started, so no
  deadline runs for them), and a match has one turn in flight at a time, so
  a move never queues behind another: it has the model to itself against
  cage.v1's 60-second turn deadline. The model generates one move at a time
  anyway, so playing more matches at once would finish none sooner; on the
  project's 2-core machine, loaded by other work, a move took a median 27 s
  and at most 49 s when two matches were played at once;
- the run has as many scout slots as the demo has scouts that pass their
  wizard, so no slot falls to the house, whose schema-bound answers would
  otherwise queue on the same instance as the moves.

The protocols' deadlines are the protocols': the demo changes the load, never
a deadline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from palaestra.providers.local import find_local_model
from palaestra.settings import Settings

__all__ = ["MATCHES_AT_ONCE", "MODEL_RUN_SIZES", "DemoModel", "demo_model"]

#: cage.v1 matches the demo's platform plays at once when the local model plays.
MATCHES_AT_ONCE: Final = 1
#: The demo run's sizes when the model answers: the three scouts that pass their wizard,
#: two candidates kept, one task of each later phase per candidate.
MODEL_RUN_SIZES: Final[dict[str, int]] = {
    "scouts": 3,
    "shortlist": 2,
    "builds": 1,
    "verifies": 1,
    "critiques": 1,
}


@dataclass(frozen=True, slots=True)
class DemoModel:
    """The local model the demo plays (``model_id``), or why it plays none."""

    model_id: str | None
    why_not: str = ""

    @property
    def on(self) -> bool:
        return self.model_id is not None

    def server_environment(self) -> dict[str, str]:
        """What the demo's platform is started with for the model's sake."""
        return {"PALAESTRA_REFEREE_CONCURRENCY": str(MATCHES_AT_ONCE)} if self.on else {}

    def run_sizes(self) -> dict[str, Any]:
        """The ``sizes`` of the demo's run (none: the launchpad's own)."""
        return {"sizes": MODEL_RUN_SIZES} if self.on else {}

    def describe(self) -> str:
        if self.on:
            return (
                f"the local model {self.model_id} answers for the good scout, builder and "
                "analyst (each in its own process) and plays the house and a model fighter in "
                "the cage, one match at a time so that no move waits behind another"
            )
        return (
            f"no local model ({self.why_not}): the agents and the house answer with their "
            "offline baselines"
        )


def demo_model(settings: Settings) -> DemoModel:
    """The local model when it is installed and on, else why not."""
    if not settings.local_model_enabled:
        return DemoModel(None, "PALAESTRA_LOCAL_MODEL_ENABLED is false")
    found = find_local_model(settings.local_model_path)
    if found.path is None:
        return DemoModel(None, f"{found.problem}; make install-local adds it")
    return DemoModel(found.model_id)
