"""What the chaos soak checks at the end, from the store and from what the agents saw.

Each check returns the lines of its violations (empty: it held) and a short summary.
A charge is an agent history row with outcome ``failure`` (a dispatch or a health ping)
or a task of the agent's ended FAILED or TIMEOUT: every charge of a hostile agent must
answer to a misbehaviour the zoo wrote down, with the seed's reason line for it; a good
agent has none.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeAlias

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from bench._chaos_zoo import ASYNC_EDGE, FIGHTERS, GOOD_EDGE, HOSTILE_EDGE
from palaestra.protocol.failures import CallFailure
from palaestra.store.models import Agent, AgentEvent, Match, Run, Task, Turn

__all__ = ["Check", "Facts", "page_split", "read_facts", "run_checks", "secrets_found"]

_TIMED_OUT: Final = r"External agent timed out after \d+ms"
_TOO_BIG: Final = r"External agent response exceeded 262144 bytes"
#: The reason line each hostile agent must be charged with, for a dispatch.
DISPATCH_REASONS: Final = {
    "drip": _TIMED_OUT,
    "endless": _TOO_BIG,
    "bomb": _TOO_BIG,
    "redirect": r"External agent responded with 302: ",
    "tls": r"External agent unreachable: tls: ",
    "storm": r"External agent responded with 503: ",
    "schema": r"Validation failed: Missing execution",
    "late": _TIMED_OUT,
}
#: The reason line of a failed health ping, for those whose pings fail.
PING_REASONS: Final = {
    "tls": r"External agent unreachable: tls: ",
    "storm": r"External agent responded with 503: ",
    "flap": r"External agent responded with 503: ",
}
TURN_REASONS: Final = {"hang": _TIMED_OUT, "big": _TOO_BIG}
ENDED_TASK: Final = {"SUCCEEDED", "FAILED", "TIMEOUT", "VOIDED"}
#: The API beats every second: its last beat before a kill may be this long before it.
BEAT_SLACK_S: Final = 2.0
#: When the API was killed, and when it served again (wall-clock seconds).
Outage: TypeAlias = tuple[float, float]


@dataclass
class Check:
    name: str
    violations: list[str] = field(default_factory=list)
    summary: str = ""

    def fail(self, line: str) -> None:
        if len(self.violations) < 20:  # enough to see what went wrong
            self.violations.append(line)
        elif len(self.violations) == 20:
            self.violations.append("... (more)")


@dataclass
class Facts:
    runs: list[Any]
    tasks: list[Any]
    agents: list[Any]
    events: list[Any]
    matches: list[Any]
    turns: list[Any]


async def read_facts(engine: AsyncEngine) -> Facts:
    async with engine.connect() as connection:

        async def rows(query: Any) -> list[Any]:
            return list((await connection.execute(query)).all())

        return Facts(
            runs=await rows(select(Run.id, Run.status)),
            tasks=await rows(
                select(
                    Task.id,
                    Task.agent_id,
                    Task.status,
                    Task.reason,
                    Task.sent_at,
                    Task.deadline_at,
                )
            ),
            agents=await rows(
                select(Agent.id, Agent.name, Agent.status, Agent.consecutive_failures)
            ),
            events=await rows(
                select(
                    AgentEvent.agent_id, AgentEvent.kind, AgentEvent.outcome, AgentEvent.reason
                ).where(AgentEvent.kind.in_(("dispatch", "ping")))
            ),
            matches=await rows(
                select(
                    Match.id,
                    Match.attacker_id,
                    Match.defender_id,
                    Match.status,
                    Match.outcome,
                    Match.decided_by,
                    Match.void_reason,
                )
            ),
            turns=await rows(
                select(Turn.match_id, Turn.turn, Turn.fighter_id, Turn.status, Turn.reason)
            ),
        )


def ended(facts: Facts) -> Check:
    check = Check("every run and match ended")
    runs = Counter(run.status for run in facts.runs)
    for run in facts.runs:
        if run.status != "COMPLETED":
            check.fail(f"run {run.id} is {run.status}")
    matches = Counter(match.status for match in facts.matches)
    for match in facts.matches:
        if match.status == "VOIDED" and not match.void_reason:
            check.fail(f"match {match.id} VOIDED without a reason")
        elif match.status not in ("SCORED", "VOIDED"):
            check.fail(f"match {match.id} is {match.status}")
    tasks = Counter(task.status for task in facts.tasks)
    for task in facts.tasks:
        if task.status not in ENDED_TASK:
            check.fail(f"task {task.id} is {task.status}")
        elif task.status == "VOIDED" and not (task.reason or "").startswith("platform fault"):
            check.fail(f"task {task.id} VOIDED as {task.reason!r}")
    turns = Counter(turn.status for turn in facts.turns)
    for turn in facts.turns:
        if turn.status not in ("OK", "FAILED"):
            check.fail(f"turn {turn.match_id}:{turn.turn} is {turn.status}")
    check.summary = (
        f"runs {dict(runs)}; matches {dict(matches)}; tasks {dict(tasks)}; turns {dict(turns)}"
    )
    return check


def once(facts: Facts, ledger: dict[str, Any], ids: dict[str, str]) -> Check:
    """No taskId reached an agent twice (or an agent it was not given to); no turn played twice."""
    check = Check("no taskId twice, no turn twice")
    owner_of = {task.id: task.agent_id for task in facts.tasks}
    received = 0
    seen: Counter[str] = Counter()
    for name, agent in ledger["agents"].items():
        for task_id in agent["task_ids"]:
            received += 1
            seen[task_id] += 1
            if owner_of.get(task_id) != ids[name]:
                check.fail(f"{name} received {task_id}, a task not given to it")
    for task_id, count in seen.items():
        if count > 1:
            check.fail(f"taskId {task_id} reached an agent {count} times")
    sent_again = 0
    for name, fighter in ledger["fighters"].items():
        bodies: dict[str, set[str]] = defaultdict(set)
        for key, digest in zip(fighter["keys"], fighter["digests"], strict=True):
            bodies[key].add(digest)
        sent_again += len(fighter["keys"]) - len(bodies)
        for key, digests in bodies.items():
            if len(digests) > 1:
                check.fail(f"{name}: turn {key} was sent with {len(digests)} different bodies")
    by_match: dict[str, list[int]] = defaultdict(list)
    for turn in facts.turns:
        by_match[turn.match_id].append(turn.turn)
    for match_id, numbers in by_match.items():
        if sorted(numbers) != list(range(1, len(numbers) + 1)):
            check.fail(f"match {match_id} has turns {sorted(numbers)}")
    check.summary = (
        f"{received:,} dispatches received, {len(seen):,} distinct taskIds; "
        f"{sum(len(f['keys']) for f in ledger['fighters'].values()):,} turn requests, "
        f"{sent_again} re-sent with the same key and body"
    )
    return check


def _charges(facts: Facts, agent_id: str) -> tuple[list[Any], list[Any]]:
    """The agent's charged tasks and its failed pings."""
    tasks = [t for t in facts.tasks if t.agent_id == agent_id and t.status in ("FAILED", "TIMEOUT")]
    pings = [
        e
        for e in facts.events
        if e.agent_id == agent_id and e.kind == "ping" and e.outcome != "success"
    ]
    return tasks, pings


def good_agents(facts: Facts, ids: dict[str, str], fighter_ids: dict[str, str]) -> Check:
    check = Check("good agents never charged")
    by_id = {row.id: row for row in facts.agents}
    for name in GOOD_EDGE:
        agent = by_id[ids[name]]
        if agent.status != "ACTIVE" or agent.consecutive_failures:
            check.fail(f"{name} is {agent.status} with {agent.consecutive_failures} failures")
        tasks, _ = _charges(facts, agent.id)
        failed_events = [
            e for e in facts.events if e.agent_id == agent.id and e.outcome != "success"
        ]
        for task in tasks:
            check.fail(f"{name} charged {task.status} for {task.id}: {task.reason}")
        for event in failed_events:
            check.fail(f"{name} charged a {event.kind}: {event.reason}")
    good_fighters = {fighter_ids[name] for name, what in FIGHTERS.items() if what == "plays well"}
    voided = {m.id for m in facts.matches if m.status == "VOIDED"}
    for turn in facts.turns:
        if (
            turn.fighter_id in good_fighters
            and turn.status == "FAILED"
            and turn.match_id not in voided
        ):
            check.fail(f"good fighter's turn {turn.match_id}:{turn.turn} FAILED: {turn.reason}")
    served = Counter(t.agent_id for t in facts.tasks if t.status == "SUCCEEDED")
    check.summary = (
        f"{sum(served[ids[n]] for n in GOOD_EDGE):,} tasks served by {len(GOOD_EDGE)} good "
        f"agents ({sum(served[ids[n]] for n in ASYNC_EDGE):,} by callback)"
    )
    return check


def hostile_agents(
    facts: Facts, ledger: dict[str, Any], ids: dict[str, str], outages: Sequence[Outage]
) -> Check:
    check = Check("hostile agents charged exactly, with the seed's reasons")
    counts = []
    by_id = {task.id: task for task in facts.tasks}
    for name in HOSTILE_EDGE:
        seen = ledger["agents"][name]
        tasks, pings = _charges(facts, ids[name])
        misbehaved = set(seen["misbehaved"])
        wanted = DISPATCH_REASONS.get(name)
        for task in tasks:
            if name != "tls" and task.id not in misbehaved:
                check.fail(f"{name} charged for {task.id}, on which it did nothing wrong")
            if wanted is None or not re.match(wanted, task.reason or ""):
                check.fail(f"{name} charged {task.reason!r}")
        wanted_ping = PING_REASONS.get(name)
        for ping in pings:
            if wanted_ping is None or not re.match(wanted_ping, ping.reason or ""):
                check.fail(f"{name} charged a ping {ping.reason!r}")
        if name in ("flap", "storm") and len(pings) > seen["pings_failed"]:
            check.fail(f"{name}: {len(pings)} pings charged, {seen['pings_failed']} failed")
        _callbacks(check, name, seen["callbacks"], by_id, outages)
        got = len(seen["task_ids"])
        counts.append(f"{name} {got}/{len(tasks)}/{len(pings)}")
    check.summary = "dispatches received/tasks charged/pings charged: " + ", ".join(counts)
    return check


def _callbacks(
    check: Check,
    name: str,
    callbacks: Sequence[Sequence[Any]],
    tasks: Mapping[str, Any],
    outages: Sequence[Outage],
) -> None:
    """The replaying agent's answers are taken once each, the late one's never, except where
    the API was down while the answer was due: then the late answer may be taken, and the
    replayed one may find its task voided (the platform's fault) when it gets through."""
    accepted = Counter(task_id for task_id, status, _ in callbacks if status == 200)
    for task_id in {task_id for task_id, _, _ in callbacks}:
        task = tasks.get(task_id)
        down = _down_while_due(task, outages)
        if name == "replay" and accepted[task_id] != 1:
            voided = task is not None and task.status == "VOIDED"
            if not (accepted[task_id] == 0 and voided and down):
                check.fail(f"replay: {task_id} accepted {accepted[task_id]} times")
        if name == "late" and accepted[task_id] and not down:
            check.fail(f"late: {task_id}'s callback after the deadline accepted, the API up")
    for task_id, status, code in callbacks:
        if status >= 500 or status == 0:
            check.fail(f"{name}: callback for {task_id} answered {status} {code}")


def _down_while_due(task: Any, outages: Sequence[Outage]) -> bool:
    """Whether the API was down (from a beat before its kill) between the task's send and
    its deadline."""
    if task is None or task.sent_at is None or task.deadline_at is None:
        return False
    return any(
        killed - BEAT_SLACK_S < task.deadline_at and back > task.sent_at for killed, back in outages
    )


def fighters(facts: Facts, fighter_ids: dict[str, str]) -> Check:
    check = Check("hostile fighters lose by their own failures")
    name_of = {fid: name for name, fid in fighter_ids.items()}
    for turn in facts.turns:
        name = name_of.get(turn.fighter_id)
        failed = turn.status == "FAILED" and name in TURN_REASONS
        if failed and not re.match(TURN_REASONS[name or ""], turn.reason or ""):
            check.fail(f"{name}'s turn {turn.match_id}:{turn.turn} failed as {turn.reason!r}")
    decided: Counter[str] = Counter()
    for match in facts.matches:
        sides = {"attacker": name_of[match.attacker_id], "defender": name_of[match.defender_id]}
        hostile = [side for side, name in sides.items() if name in TURN_REASONS]
        if match.status != "SCORED" or len(hostile) != 1:
            continue
        decided[f"{match.decided_by}"] += 1
        winner = "defender" if hostile[0] == "attacker" else "attacker"
        if (match.decided_by, match.outcome) != ("forfeit", winner):
            check.fail(f"match {match.id}: {sides} ended {match.outcome} by {match.decided_by}")
    check.summary = f"matches with one hostile fighter decided by {dict(decided)}"
    return check


def run_checks(
    facts: Facts,
    ledger: dict[str, Any],
    ids: dict[str, str],
    fighter_ids: dict[str, str],
    outages: Sequence[Outage] = (),
) -> list[Check]:
    """Every end check; ``outages``: when the API was killed and when it served again
    (wall-clock seconds)."""
    return [
        ended(facts),
        once(facts, ledger, ids),
        good_agents(facts, ids, fighter_ids),
        hostile_agents(facts, ledger, ids, outages),
        fighters(facts, fighter_ids),
    ]


#: A row of the agent page's failures-by-kind table: its kind and its dispatches.
_SPLIT_ROW: Final = re.compile(r'<tr data-kind="([^"]+)"><td>.*?</td><td class="num">(\d+)</td>')


def page_split(facts: Facts, pages: dict[str, str], ids: dict[str, str]) -> Check:
    """Each agent's page splits its failed dispatches by kind as its tasks ended."""
    check = Check("agent pages split failures by kind as they were charged")
    rows = 0
    for name, html in pages.items():
        shown = {kind: int(count) for kind, count in _SPLIT_ROW.findall(html)}
        ended = [t for t in facts.tasks if t.agent_id == ids[name]]
        wanted = Counter(
            str(CallFailure.of(t.reason)) for t in ended if t.status in ("FAILED", "TIMEOUT")
        )
        wanted.update(str(CallFailure.PLATFORM_FAULT) for t in ended if t.status == "VOIDED")
        shown = {kind: count for kind, count in shown.items() if count}
        rows += len(shown)
        if shown != dict(wanted):
            check.fail(f"{name}'s page shows {shown}, its tasks ended {dict(wanted)}")
    check.summary = f"{len(pages)} agent pages read, {rows} rows with dispatches"
    return check


def secrets_found(secrets: dict[str, str], files: Iterable[Path]) -> list[str]:
    """Each (file, secret's label) where a secret's text appears."""
    found = []
    for path in files:
        data = path.read_text(errors="replace")
        for value, label in secrets.items():
            if value and value in data:
                found.append(f"{path.name}: {label}")
    return found
