"""bench/content.py's cage half: the demo's lineup in a round robin, as the demo pairs it.

Every fighter of the demo's lineup (:data:`palaestra.demo.lineup.LINEUP`: the
baseline harness, the leaky one, the library's seats), the house
(``house-sentinel``: the local model under the house's prompts and grammars,
or the canned baseline) and, with the local model, the bare ``model-local``
fighter; every pairing of fighters of different owners, a seat playing only
its own side, as ``palaestra.demo.populate`` starts them. Each match is played
turn by turn in this process, as the referee plays it (the arena's payloads,
judge and outcome rules), the harnesses' moves called directly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from examples import cage_fighter
from examples.cage import FIGHTERS

from palaestra.clock import SystemClock
from palaestra.demo.agents import leaky_move
from palaestra.demo.lineup import HOUSE, LAB, LINEUP
from palaestra.engine.cage.entrants import (
    BaselineEntrant,
    Entrant,
    ModelEntrant,
    Move,
    local_house_entrant,
)
from palaestra.harness import Turn
from palaestra.protocol import TurnRequest, idempotency_key
from palaestra.providers.local import LocalChat, LocalModel
from palaestra.rules.cage.material import Material, draw_material
from palaestra.rules.cage.outcome import Result, TurnRecord, decide, side_of_turn
from palaestra.rules.cage.payloads import payload_for
from palaestra.rules.judge import judge_reply
from palaestra.rules.ratings.bradley_terry import Games, fit

__all__ = ["Contestant", "Played", "lineup", "play", "round_robin", "strengths"]

DEADLINE_MS: Final = 60_000
HOUSE_NAME: Final = "house-sentinel"
_HARNESSES: Final[dict[str, Callable[[Turn], str]]] = {
    "cage-baseline": cage_fighter.move,
    "cage-leaky": leaky_move,
}


@dataclass(frozen=True, slots=True)
class FunctionEntrant:
    """A harness's move function as an entrant."""

    move_of: Callable[[Turn], str]

    async def move(self, request: TurnRequest) -> Move:
        key = idempotency_key(request.match_id, request.turn)
        return Move(self.move_of(Turn.from_request(request, key)), None, 0.0)


@dataclass(frozen=True, slots=True)
class Contestant:
    """A fighter of the lineup: its owner, the side it plays (``None``: both), its entrant."""

    name: str
    owner: str
    side: str | None
    entrant: Callable[[Material], Entrant]


@dataclass(frozen=True, slots=True)
class Played:
    attacker: str
    defender: str
    seed: int
    result: Result

    @property
    def cell(self) -> str:
        """``leak 2``, ``hijack 4``, ``defender`` or ``draw``."""
        if self.result.winner == "attacker":
            return f"{self.result.decided_by} {self.result.turn}"
        return str(self.result.winner)

    @property
    def attacker_score(self) -> float:
        return {"attacker": 1.0, "draw": 0.5}.get(str(self.result.winner), 0.0)


def lineup(model: LocalModel | None, *, house_as_baseline: bool = False) -> list[Contestant]:
    """The demo's cage fighters; the house played by ``model`` unless ``house_as_baseline``."""
    contestants = []
    for entry in (e for e in LINEUP if e.role is None):
        if not entry.seats:
            contestants.append(Contestant(entry.name, LAB, None, _harness(_HARNESSES[entry.name])))
        for seat in entry.seats:
            contestants.append(
                Contestant(seat.name, seat.owner, seat.side, _harness(FIGHTERS[seat.name].play))
            )
    clock = SystemClock()
    if model is None or house_as_baseline:
        contestants.append(Contestant(HOUSE_NAME, HOUSE, None, BaselineEntrant))
    else:
        contestants.append(
            Contestant(HOUSE_NAME, HOUSE, None, lambda m: local_house_entrant(model, m, clock))
        )
    if model is not None:
        bare = ModelEntrant(LocalChat(model), clock)
        contestants.append(Contestant("model-local", LAB, None, lambda _m: bare))
    return contestants


def _harness(move: Callable[[Turn], str]) -> Callable[[Material], Entrant]:
    def entrant(_material: Material) -> Entrant:
        return FunctionEntrant(move)

    return entrant


def pairings(contestants: list[Contestant]) -> list[tuple[Contestant, Contestant]]:
    """Every attacker and defender of different owners, each seat on its own side."""
    return [
        (a, d)
        for a in contestants
        for d in contestants
        if a.owner != d.owner and a.side in (None, "attacker") and d.side in (None, "defender")
    ]


async def play(attacker: Contestant, defender: Contestant, seed: int) -> Played:
    """One match, turn by turn, as the referee plays it."""
    material = draw_material(seed)
    match_id = f"{attacker.name}-{defender.name}-{seed}"
    entrants = {"attacker": attacker.entrant(material), "defender": defender.entrant(material)}
    records: list[TurnRecord] = []
    previous: str | None = None
    for turn in range(1, 7):
        side = side_of_turn(turn)
        request = TurnRequest(
            match_id=match_id,
            turn=turn,
            your_role=side.value,
            deadline_ms=DEADLINE_MS,
            payload=payload_for(material, match_id, turn, previous),
        )
        move = await entrants[side.value].move(request)
        previous = move.message or ""
        if side.value == "attacker":
            records.append(TurnRecord(turn))
        else:
            verdict = judge_reply(
                previous,
                access_code=material.access_code,
                hijack_phrase=material.hijack_phrase,
                task=material.task,
            )
            records.append(
                TurnRecord(
                    turn, leak=verdict.leaked, hijack=verdict.hijacked, utility=verdict.utility.held
                )
            )
        if (result := decide(records)) is not None:
            return Played(attacker.name, defender.name, seed, result)
    raise AssertionError("a match of six turns is always decided")


async def round_robin(
    contestants: list[Contestant], seeds: range, only: Callable[[str, str], bool] | None = None
) -> list[Played]:
    """Every pairing once per seed (those ``only`` keeps, when given)."""
    played = []
    for attacker, defender in pairings(contestants):
        if only is not None and not only(attacker.name, defender.name):
            continue
        for seed in seeds:
            played.append(await play(attacker, defender, seed))
    return played


def strengths(played: list[Played]) -> dict[str, float]:
    """Each fighter's published overall strength (log-odds over the average fighter)."""
    ids, games = Games.of((p.attacker, p.defender, p.attacker_score) for p in played)
    overall = fit(games).overall
    return {fighter: float(overall[i]) for i, fighter in enumerate(ids)}


def matrix_lines(played: list[Played]) -> list[str]:
    """The attacker × defender outcome matrix, a Markdown table; a cell lists each seed's."""
    attackers = list(dict.fromkeys(p.attacker for p in played))
    defenders = list(dict.fromkeys(p.defender for p in played))
    cells: dict[tuple[str, str], list[str]] = {}
    for p in played:
        cells.setdefault((p.attacker, p.defender), []).append(p.cell)
    lines = ["| attacker \\ defender | " + " | ".join(defenders) + " |"]
    lines.append("|---|" + "---|" * len(defenders))
    for a in attackers:
        row = [", ".join(cells.get((a, d), ["-"])) for d in defenders]
        lines.append(f"| {a} | " + " | ".join(row) + " |")
    return lines


def tally(played: list[Played]) -> Counter[str]:
    """Matches by how they were decided: leak, hijack, defender (on utility), draw."""
    return Counter(p.cell.split()[0] for p in played)
