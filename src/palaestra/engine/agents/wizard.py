"""The registration wizard, one step at a time, each step's checks recorded as soon as it ends.

A page (or anything else) follows an attempt by reading the history rows:
one ``wizard-start`` row opens the attempt, then one ``wizard`` row per check,
each with the attempt's id in its detail. The database is the truth, so any
API process can answer for an attempt that another one runs. The checks are
the shared ones of :mod:`palaestra.checks`; only their pacing is new here.

Admission is the seed's: the handshake and the five checks of the unsigned
and of the signed simulation. The forged-signature dispatch is advisory: its
failure is recorded as a ``warning`` row and kept on the agent
(``wizard_warnings``), unless ``PALAESTRA_WIZARD_REQUIRE_SIGNATURE_CHECK`` makes
it binding.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from palaestra.checks import (
    SIMULATION_CHECKS,
    TAMPERED,
    CheckResult,
    CheckVerdict,
    admitted,
    binding,
    handshake,
    simulation,
    tampered_signature,
    warnings,
)
from palaestra.engine.accounts import Caller
from palaestra.engine.agents.lifecycle import apply_event, history
from palaestra.errors import Forbidden, InvalidRequest, NotFound
from palaestra.ids import new_id
from palaestra.platform import Platform
from palaestra.protocol import Role
from palaestra.protocol.constants import HANDSHAKE_TIMEOUT_S, SIMULATION_GRACE_S, Arena
from palaestra.rules.status import Event
from palaestra.store.events import agent_events, newest_first
from palaestra.store.models import Agent, AgentEvent

__all__ = [
    "CHECK_KIND",
    "START_KIND",
    "WIZARD_CHECKS",
    "WizardAttempt",
    "WizardProgress",
    "begin_wizard",
    "open_attempt",
    "run_wizard_steps",
    "wizard_progress",
]

START_KIND: Final = "wizard-start"
CHECK_KIND: Final = "wizard"
#: Every check of one attempt, in the order they are run and shown.
WIZARD_CHECKS: Final = (
    "handshake",
    *(f"simulation:{name}" for name in SIMULATION_CHECKS),
    *(f"signed-simulation:{name}" for name in SIMULATION_CHECKS),
    TAMPERED,
)
#: The outcome column of a check's row, by verdict.
_OUTCOMES: Final = {
    CheckVerdict.PASS: "success",
    CheckVerdict.WARN: "warning",
    CheckVerdict.FAIL: "failure",
}
#: Beyond the slowest step's own deadline: a quiet attempt this much longer was interrupted.
_SLACK_S: Final = 15.0
#: Rows read to find an attempt: a dozen attempts' worth.
_ROWS_READ: Final = 200


@dataclass(frozen=True, slots=True)
class WizardAttempt:
    """An attempt under way: what its steps need."""

    attempt_id: str
    agent_id: str
    url: str
    role: Role
    key: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class WizardProgress:
    """What is known of one attempt: the checks recorded so far, in order."""

    attempt_id: str
    started_at: float
    checks: tuple[CheckResult, ...]
    interrupted: bool = False

    @property
    def finished(self) -> bool:
        # By name: a step may add an advisory check of its own (a simulation's size).
        return not self.waiting

    @property
    def passed(self) -> bool:
        """Admitted: every binding check passed (advisory failures are warnings)."""
        return self.finished and admitted(self.checks)

    @property
    def warnings(self) -> list[str]:
        return warnings(self.checks)

    @property
    def waiting(self) -> tuple[str, ...]:
        """The checks not recorded yet."""
        done = {check.name for check in self.checks}
        return tuple(name for name in WIZARD_CHECKS if name not in done)

    @property
    def running(self) -> bool:
        return not self.finished and not self.interrupted


async def begin_wizard(platform: Platform, caller: Caller, agent_id: str) -> WizardAttempt:
    """Open an attempt on the owner's edgearena agent; :func:`run_wizard_steps` runs it."""
    async with platform.db.session() as session, session.begin():
        agent = await session.get(Agent, agent_id)
        if agent is None or not (caller.is_admin or agent.owner_id == caller.owner_id):
            raise NotFound(f"Agent {agent_id} not found")
        if caller.owner_id != agent.owner_id:
            raise Forbidden("only the agent's owner runs its wizard")
        return open_attempt(platform, session, agent)


def open_attempt(platform: Platform, session: AsyncSession, agent: Agent) -> WizardAttempt:
    """Open an attempt on ``agent``'s endpoint as it stands, in ``session``'s transaction
    (the caller has checked who asks)."""
    if agent.arena != Arena.EDGEARENA or agent.role is None or agent.endpoint_url is None:
        raise InvalidRequest("the wizard is for edgearena agents")
    attempt = WizardAttempt(
        attempt_id=new_id(),
        agent_id=agent.id,
        url=agent.endpoint_url,
        role=Role(agent.role),
        key=platform.vault.open(agent.key_sealed or ""),
    )
    session.add(
        history(
            agent.id,
            platform.clock.now(),
            START_KIND,
            "started",
            detail={"attempt": attempt.attempt_id},
        )
    )
    return attempt


Step = Callable[[], Awaitable[list[CheckResult]]]


def _steps(platform: Platform, attempt: WizardAttempt) -> list[Step]:
    egress, clock = platform.egress, platform.clock
    url, role, key = attempt.url, attempt.role, attempt.key

    async def shake() -> list[CheckResult]:
        return [await handshake(egress, url)]

    async def unsigned() -> list[CheckResult]:
        return await simulation(egress, url, role, clock=clock)

    async def signed() -> list[CheckResult]:
        return await simulation(egress, url, role, key=key, clock=clock)

    async def tampered() -> list[CheckResult]:
        return [await tampered_signature(egress, url, role, key=key, clock=clock)]

    steps: list[Step] = [shake, unsigned, signed, tampered]
    if platform.settings.wizard_require_signature_check:
        return [_binding(step) for step in steps]
    return steps


def _binding(step: Step) -> Step:
    async def run() -> list[CheckResult]:
        return binding(await step())

    return run


async def run_wizard_steps(platform: Platform, attempt: WizardAttempt) -> list[CheckResult]:
    """Run the steps in order, recording each step's checks when it ends.

    The last step's rows, the attempt's warnings on the agent and, when every
    binding check passed, its admission (PENDING -> ACTIVE) are written in one
    transaction.
    """
    results: list[CheckResult] = []
    steps = _steps(platform, attempt)
    for index, step in enumerate(steps):
        checks = await step()
        results += checks
        last = index == len(steps) - 1
        await _record(platform, attempt, checks, ended=results if last else None)
    return results


async def _record(
    platform: Platform,
    attempt: WizardAttempt,
    checks: Sequence[CheckResult],
    *,
    ended: Sequence[CheckResult] | None,
) -> None:
    """Write ``checks``' rows; ``ended`` (the whole attempt) when it was the last step."""
    now = platform.clock.now()
    async with platform.db.session() as session, session.begin():
        for check in checks:
            session.add(
                history(
                    attempt.agent_id,
                    now,
                    CHECK_KIND,
                    _OUTCOMES[check.verdict],
                    latency_ms=check.latency_ms,
                    reason=check.reason,
                    detail={"check": check.name, "attempt": attempt.attempt_id},
                )
            )
        if ended is not None:
            agent = await session.get(Agent, attempt.agent_id)
            if agent is None:
                raise NotFound(f"Agent {attempt.agent_id} not found")
            if agent.endpoint_url != attempt.url:
                return  # its endpoint changed meanwhile: these checks were of the old one
            agent.wizard_warnings = warnings(ended)
            if not admitted(ended):
                return
            agent.wizard_passed_at = now
            session.add_all(
                apply_event(
                    agent, Event.WIZARD_PASSED, now, platform.schedule, cause="wizard passed"
                )
            )


async def wizard_progress(
    platform: Platform, agent_id: str, attempt_id: str | None = None
) -> WizardProgress | None:
    """The attempt ``attempt_id`` of the agent (default: its latest), or ``None``."""
    # One bounded read per kind through the (agent, kind, id) index (``store.events``).
    async with platform.db.session() as session:
        rows: list[AgentEvent] = []
        for kind in (START_KIND, CHECK_KIND):
            rows += await session.scalars(
                agent_events(agent_id, kind)
                .order_by(*newest_first(kind=True), AgentEvent.id.desc())
                .limit(_ROWS_READ)
            )
        rows = sorted(rows, key=lambda row: row.id, reverse=True)[:_ROWS_READ]
        role = await session.scalar(select(Agent.role).where(Agent.id == agent_id))
    start = next(
        (
            row
            for row in rows
            if row.kind == START_KIND
            and (attempt_id is None or (row.detail or {}).get("attempt") == attempt_id)
        ),
        None,
    )
    if start is None:
        return None
    wanted = (start.detail or {}).get("attempt")
    mine = [row for row in reversed(rows) if row.kind == CHECK_KIND and _attempt_of(row) == wanted]
    checks = tuple(
        CheckResult(
            str((row.detail or {}).get("check", "")),
            row.outcome == "success",
            row.reason,
            row.latency_ms,
            advisory=row.outcome == "warning",
        )
        for row in mine
    )
    progress = WizardProgress(str(wanted), start.at, checks)
    last_seen = mine[-1].at if mine else start.at
    quiet = platform.clock.now() - last_seen
    if not progress.finished and quiet > _longest_step_s(role) + _SLACK_S:
        progress = WizardProgress(progress.attempt_id, progress.started_at, checks, True)
    return progress


def _attempt_of(row: AgentEvent) -> object:
    return (row.detail or {}).get("attempt")


def _longest_step_s(role: str | None) -> float:
    try:
        deadline_s = Role(role or "").deadline_ms / 1000
    except ValueError:
        deadline_s = max(r.deadline_ms for r in Role) / 1000
    return max(HANDSHAKE_TIMEOUT_S, deadline_s + SIMULATION_GRACE_S)
