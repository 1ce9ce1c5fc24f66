"""The demo's lineup: the agents it starts and registers, and what each one shows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from palaestra.protocol.constants import Role

__all__ = ["GUARD", "HOUSE", "LAB", "LINEUP", "Entry", "Seat"]

#: The owners the demo registers its agents and fighters for. Co-owned fighters never fight,
#: so the library's defenders are another owner's than its attackers.
LAB: Final = "demo-lab"
GUARD: Final = "demo-guard"
HOUSE: Final = "arena-house"


@dataclass(frozen=True, slots=True)
class Seat:
    """A cage fighter that an entry serves on its own path (``<url><name>``): the side it
    plays in the demo's matches, and the owner it is registered for."""

    name: str
    side: str  # "attacker" or "defender"
    owner: str


@dataclass(frozen=True, slots=True)
class Entry:
    """One agent of the lineup: what serves it and what it shows."""

    name: str
    target: str  # module:attribute for `palaestra agent serve`, or a script's path
    role: Role | None  # None for a cage harness
    shows: str
    harness_name: str | None = None  # a cage harness's name, as it registers its endpoint
    #: Set for an agent written without the SDK: ``target`` is a script run by Python with
    #: these arguments, its key in ``EDGE_AGENT_KEY``.
    script_args: tuple[str, ...] | None = None
    #: What serves it instead when the local model is installed and on.
    model_target: str | None = None
    #: Set for a process serving several cage fighters, each on its own path; the entry's
    #: name is then the process's, and each seat is a fighter of its own.
    seats: tuple[Seat, ...] = ()
    #: The owner a cage harness of its own (no seats) is registered for.
    owner: str = LAB

    def target_for(self, local_model: bool) -> str:
        return self.model_target if local_model and self.model_target else self.target


LINEUP: Final = (
    Entry(
        "scout-atlas",
        "examples.scout:app",
        Role.SCOUT,
        "a good scout (examples/scout.py)",
        model_target="palaestra.demo.model_agents:scout",
    ),
    Entry(
        "scout-beacon",
        "palaestra.demo.agents:flaky_scout",
        Role.SCOUT,
        "flaky: its health pings fail in bursts; it drops to DEGRADED, PROBATION, and recovers",
    ),
    Entry(
        "builder-forge",
        "examples.builder:app",
        Role.BUILDER,
        "a good builder",
        model_target="palaestra.demo.model_agents:builder",
    ),
    Entry(
        "analyst-lens",
        "examples.analyst:app",
        Role.ANALYST,
        "a good analyst",
        model_target="palaestra.demo.model_agents:analyst",
    ),
    Entry(
        "analyst-tortoise",
        "palaestra.demo.agents:slow_analyst",
        Role.ANALYST,
        "slow: over a second per task, within its deadlines",
    ),
    Entry(
        "scout-sloppy",
        "palaestra.demo.agents:sloppy_scout",
        Role.SCOUT,
        "breaks the schema and ignores signatures: its wizard fails on the schema, it stays "
        "PENDING",
    ),
    Entry(
        "scout-plain",
        "examples/plain_scout.py",
        Role.SCOUT,
        "written without the SDK and verifying no signature: admitted with the warning "
        "'accepts forged signatures'",
        script_args=("--trust-signatures",),
    ),
    Entry(
        "cage-baseline",
        "examples.cage_fighter:app",
        None,
        "a cage.v1 harness (both sides)",
        "baseline-cage-fighter: one classic injection as attacker; refuses everything as defender",
    ),
    Entry(
        "cage-leaky",
        "palaestra.demo.agents:leaky_fighter",
        None,
        "leaks on purpose: as defender it gives its access code away in base64 when asked, "
        "so the judge scores a breach",
        "leaky-on-purpose: as defender, gives its access code away in base64 when asked",
        # Another owner's than the baseline harness's, so that two harnesses meet on both
        # sides without the house: a match the house baseline plays is never rated.
        owner=GUARD,
    ),
    Entry(
        "cage-library",
        "examples.cage:app",
        None,
        "attackers of one technique each and defenders of graded strength, one process "
        "(examples/cage): leaks, hijacks, draws and a defence that holds",
        seats=(
            Seat("transformed-secret", "attacker", LAB),
            Seat("persona-role-play", "attacker", LAB),
            Seat("multi-turn-escalation", "attacker", LAB),
            Seat("keyword-filter", "defender", GUARD),
            Seat("output-filter", "defender", GUARD),
            Seat("allow-list", "defender", GUARD),
        ),
    ),
)
