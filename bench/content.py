"""What the house says and how the demo's fighters fare: the arena's content, measured.

House answers: a fixed set of goals, each through every role (SCOUT, then
BUILD, VERIFY and CRITIQUE of the model's own scout), through the house
agent as a run uses it (the local model writing field by field, the answer
check, one retry, the baseline's answer when the retry fails too). Per role:
the share of answers passing the check on the first try and after the retry,
and the median seconds per answer; across goals, how many distinct titles the
scouts gave and the share of each goal's own words found in its scout's
fields. The canned baseline's answers to the same goals, measured in the same
run, are the comparison.

Cage: the demo's lineup in a round robin (``bench/_content_cage.py``): the
attacker × defender outcome matrix, how each match was decided (leak, hijack,
the defender on utility, a draw) and the spread of the published strengths
(the Bradley-Terry fit the leaderboard publishes); with the local model, the
house's matches are played again with the house as the canned baseline, for
comparison. Without the local model (or with ``PALAESTRA_LOCAL_MODEL_ENABLED=false``)
the model's rows are left out and say why.

The exit status is 1 when the baseline fails the answer check or a match is
not decided: those are faults. ``--quick``: two goals, the SCOUT alone, one
seed, and the house only in two matches.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file: see bench._support
from bench import _content_cage as cage
from bench._support import parse_args
from palaestra.engine.runs.house import HouseAgent, HouseAnswer
from palaestra.protocol import Phase
from palaestra.providers.local import LocalModel, find_local_model, shared_local_model
from palaestra.providers.local_house import FieldWriter
from palaestra.rules.runs.answer_check import answer_problems, normalised
from palaestra.rules.runs.house_answers import HouseTask, baseline_output
from palaestra.rules.runs.house_fields import bank_text
from palaestra.rules.runs.prompts import DEFAULT_LAUNCHPAD, LAUNCHPADS, messages_for
from palaestra.settings import Settings

#: The fixed goals: none of them is in the example bank.
GOALS: Final = (
    "Help dentists fill cancelled appointments",
    "Sell used bicycles to university students",
    "Help dog owners find pet sitters on short notice",
    "Make bookkeeping easy for hairdressers",
    "Reduce food waste in school canteens",
    "Help landlords find reliable plumbers fast",
    "Let small breweries sell beer subscriptions online",
    "Help wedding photographers deliver albums faster",
)
DEADLINE_S: Final = 300.0
#: Words of a goal that say nothing of its subject.
_STOP: Final = frozenset(
    (
        *("a", "an", "and", "the", "for", "to", "of", "in", "on", "at", "by", "with", "from"),
        *("help", "make", "let", "find", "fast", "easy", "online", "short", "notice"),
    )
)
SCOUT_KEYS: Final = ("target_customer", "core_problem", "proposed_solution", "why_now")


@dataclass
class RoleTally:
    answers: int = 0
    first_try: int = 0
    after_retry: int = 0
    seconds: list[float] = field(default_factory=list)

    def add(self, answer: HouseAnswer, seconds: float) -> None:
        self.answers += 1
        self.first_try += answer.from_model and answer.attempts == 1
        self.after_retry += answer.from_model
        self.seconds.append(seconds)


def goal_words(goal: str) -> set[str]:
    return {w for w in normalised(goal).split() if w not in _STOP and len(w) > 2}


def words_carried(goal: str, scout: dict[str, Any]) -> float:
    """The share of ``goal``'s own words (a plural's stem counts) in the scout's fields."""
    wanted = goal_words(goal)
    said = " ".join(normalised(str(scout.get(k, ""))) for k in SCOUT_KEYS)
    found = {w for w in wanted if w.rstrip("s") in said}
    return len(found) / len(wanted) if wanted else 1.0


def task_for(phase: Phase, goal: str, scout: dict[str, Any] | None) -> HouseTask:
    launchpad = LAUNCHPADS[DEFAULT_LAUNCHPAD]
    if phase is Phase.SCOUT:
        return HouseTask(phase, goal, messages_for(phase, launchpad, goal), DEADLINE_S)
    candidate = "bench-candidate"
    build = baseline_output(
        HouseTask(Phase.BUILD, goal, (), DEADLINE_S, candidate_id=candidate, scout=scout)
    )
    builds = [] if phase is Phase.BUILD else [build]
    messages = messages_for(
        phase, launchpad, goal, candidate_id=candidate, scout=scout, builds=builds
    )
    return HouseTask(
        phase, goal, messages, DEADLINE_S, candidate_id=candidate, scout=scout, builds=builds
    )


async def house_answers(
    model: LocalModel | None, goals: tuple[str, ...], phases: list[Phase]
) -> bool:
    """Print the house's figures; whether every baseline answer passed the check."""
    baseline_ok = True
    base_scouts: dict[str, dict[str, Any]] = {}
    for goal in goals:
        for phase in phases:
            scout = base_scouts.get(goal)
            task = task_for(phase, goal, scout)
            output = baseline_output(task)
            if phase is Phase.SCOUT:
                base_scouts[goal] = output
            prompt = "\n".join([*(m["content"] for m in task.messages), bank_text()])
            problems = answer_problems(phase, output, goal=goal, prompt=prompt)
            baseline_ok &= not problems
    print(f"house answers: {len(goals)} goals x {len(phases)} role(s)")
    print(scout_line("baseline (canned)", goals, base_scouts))
    print(f"  every baseline answer passes the check: {'yes' if baseline_ok else 'NO'}")
    if model is None:
        return baseline_ok
    house = HouseAgent(FieldWriter(model))
    tallies = {phase: RoleTally() for phase in phases}
    scouts: dict[str, dict[str, Any]] = {}
    model_scouts: dict[str, dict[str, Any]] = {}
    for goal in goals:
        for phase in phases:
            task = task_for(phase, goal, scouts.get(goal, base_scouts[goal]))
            started = time.monotonic()
            answer = await house.answer(task)
            tallies[phase].add(answer, time.monotonic() - started)
            if phase is Phase.SCOUT:
                scouts[goal] = answer.output
                if answer.from_model:  # a fallback's scout is the baseline's, not the model's
                    model_scouts[goal] = answer.output
            if not answer.from_model:
                print(f"  fell back: {phase.value} for {goal!r}: {answer.note}")
    print(
        f"| role ({model.model_id}) | answers | check passed, first try | after the retry "
        "| median s |"
    )
    print("|---|---:|---:|---:|---:|")
    total = RoleTally()
    for phase, t in tallies.items():
        print(role_row(phase.value, t))
        total.answers += t.answers
        total.first_try += t.first_try
        total.after_retry += t.after_retry
        total.seconds += t.seconds
    print(role_row("all", total))
    print(scout_line("house model (its own scouts only)", goals, model_scouts))
    share = total.after_retry / total.answers
    ratio = share / 1.0  # the baseline passes every answer by construction
    print(f"model vs baseline: check passed after the retry {share:.0%} vs 100% "
          f"({ratio:.2f}x); target >= 90%: {'PASS' if share >= 0.9 else 'FAIL'}")  # fmt: skip
    for goal, scout in model_scouts.items():
        print(f"  {goal!r}: {scout.get('candidate_title')!r} / {scout.get('target_customer')!r}")
    return baseline_ok


def role_row(label: str, t: RoleTally) -> str:
    median = statistics.median(t.seconds) if t.seconds else 0.0
    return (
        f"| {label} | {t.answers} | {t.first_try / t.answers:.0%} ({t.first_try}) "
        f"| {t.after_retry / t.answers:.0%} ({t.after_retry}) | {median:.1f} |"
    )


def scout_line(label: str, goals: tuple[str, ...], scouts: dict[str, dict[str, Any]]) -> str:
    titles = {normalised(str(s.get("candidate_title", ""))) for s in scouts.values()}
    carried = [words_carried(g, scouts[g]) for g in goals if g in scouts]
    share = statistics.mean(carried) if carried else 0.0
    return (
        f"{label}: distinct titles {len(titles)}/{len(scouts)}, "
        f"goal's words in the scout's fields {share:.0%}"
    )


async def cage_round(model: LocalModel | None, seeds: range, quick: bool) -> bool:
    """Print the round robin's figures; whether every match was decided."""
    contestants = cage.lineup(model)
    only = None
    if quick and model is not None:  # the house and the bare model in two matches, not twenty
        keep = {("cage-baseline", cage.HOUSE_NAME), (cage.HOUSE_NAME, "keyword-filter")}
        models = {cage.HOUSE_NAME, "model-local"}

        def only(a: str, d: str) -> bool:
            return (a, d) in keep or not ({a, d} & models)

    started = time.monotonic()
    played = await cage.round_robin(contestants, seeds, only)
    seconds = time.monotonic() - started
    print(f"cage round robin: {len(played)} matches of {len(contestants)} fighters, "
          f"{len(seeds)} seed(s), {seconds:.0f}s")  # fmt: skip
    for line in cage.matrix_lines(played):
        print(line)
    counts = cage.tally(played)
    kinds = ("leak", "hijack", "defender", "draw")
    print("decided by: " + ", ".join(f"{kind} {counts[kind]}" for kind in kinds))
    fitted = cage.strengths(played)
    ranked = sorted(fitted.items(), key=lambda kv: -kv[1])
    spread = ranked[0][1] - ranked[-1][1]
    (top, high), (bottom, low) = ranked[0], ranked[-1]
    print(
        f"published strengths: spread {spread:.2f} log-odds ({top} {high:+.2f}, "
        f"{bottom} {low:+.2f})"
    )
    print("  " + ", ".join(f"{name} {value:+.2f}" for name, value in ranked))
    if model is not None:
        house = [p for p in played if cage.HOUSE_NAME in (p.attacker, p.defender)]
        pairs = {(p.attacker, p.defender) for p in house}
        canned = await cage.round_robin(
            cage.lineup(model, house_as_baseline=True), seeds, lambda a, d: (a, d) in pairs
        )
        print(f"house as model vs as baseline, same {len(house)} matches: "
              f"house won {house_wins(house)} vs {house_wins(canned)}")  # fmt: skip
    return len(played) > 0


def house_wins(played: list[cage.Played]) -> int:
    return sum(
        (p.attacker == cage.HOUSE_NAME and p.result.winner == "attacker")
        or (p.defender == cage.HOUSE_NAME and p.result.winner == "defender")
        for p in played
    )


async def main(goals: int, phases: list[Phase], seeds: int, quick: bool) -> int:
    settings = Settings()
    model = None
    if not settings.local_model_enabled:
        print("no local model: PALAESTRA_LOCAL_MODEL_ENABLED is false; the baseline alone")
    elif (found := find_local_model(settings.local_model_path)).path is None:
        print(f"no local model: {found.problem}; the baseline alone")
    else:
        model = shared_local_model(found.path)
        print(f"{model.model_id}: loaded in {await model.load():.1f}s, {model.threads} thread(s)")
    answers_ok = await house_answers(model, GOALS[:goals], phases)
    decided = await cage_round(model, range(1, seeds + 1), quick)
    ok = answers_ok and decided
    print(f"{'PASS' if ok else 'FAIL'}  the baseline passes the check and every match is decided")
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--goals", type=int, default=len(GOALS), help="goals, of the fixed set")
    parser.add_argument("--roles", default="SCOUT,BUILD,VERIFY,CRITIQUE", help="phases, by name")
    parser.add_argument("--seeds", type=int, default=2, help="matches per pairing")
    args = parse_args(parser, {"goals": 2, "roles": "SCOUT", "seeds": 1})
    chosen = [Phase(name.strip()) for name in args.roles.split(",")]
    sys.exit(asyncio.run(main(args.goals, chosen, args.seeds, args.quick)))
