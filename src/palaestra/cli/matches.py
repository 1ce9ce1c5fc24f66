"""``palaestra match A B``: play one cage.v1 match here and print its transcript.

The match is played in this process against the configured database (the
embedded default needs nothing else running), turn by turn, each turn printed
as it is recorded; the judge's findings are shown under each defender reply,
with the characters that breached highlighted. If a server on the same
database picks the match up too, the referee's turn leases keep them from
playing a turn twice and this command simply follows along.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.text import Text
from sqlalchemy.exc import OperationalError

from palaestra.cli.app import app
from palaestra.cli.common import EgressAllow, load_settings
from palaestra.engine.accounts import Caller
from palaestra.engine.cage.matches import MatchTranscript, create_match, get_match
from palaestra.engine.cage.referee import Step, play_next_turn
from palaestra.errors import PalaestraError
from palaestra.platform import Platform
from palaestra.rules.cage.matchflow import MatchStatus, TurnStatus
from palaestra.rules.cage.outcome import Winner
from palaestra.rules.producers import producer_label
from palaestra.settings import Settings
from palaestra.store.models import Match, Turn

__all__ = ["match", "render_outcome", "render_turn"]

_SHOWN_CHARS = 4000
_FOLLOW_S = 0.2
_SIDE_STYLE = {"attacker": "magenta", "defender": "cyan"}
_BREACH = "bold white on red"
_PARTIAL = "black on yellow"


@app.command()
def match(
    attacker: Annotated[str, typer.Argument(help="The attacking fighter's id.")],
    defender: Annotated[str, typer.Argument(help="The defending fighter's id.")],
    deadline_ms: Annotated[
        int | None,
        typer.Option(help="Per-turn deadline (default: PALAESTRA_CAGE_TURN_DEADLINE_MS)."),
    ] = None,
    allow: EgressAllow = None,
) -> None:
    """Play one cage.v1 match between two fighters and print the transcript."""
    settings = load_settings(egress_allow=allow or None)
    try:
        finished = asyncio.run(_play(settings, attacker, defender, deadline_ms, Console()))
    except PalaestraError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    raise typer.Exit(0 if finished.match.status == MatchStatus.SCORED else 1)


async def _play(
    settings: Settings, attacker: str, defender: str, deadline_ms: int | None, console: Console
) -> MatchTranscript:
    platform = await Platform.open(settings)
    try:
        admin = Caller(owner_id=None, is_admin=True)
        created = await create_match(platform, admin, attacker, defender, deadline_ms=deadline_ms)
        console.print(render_header(created))
        shown = 0
        while True:
            try:
                step = (await play_next_turn(platform, created.id)).step
            except OperationalError:  # the database is busy with another writer: try again
                step = Step.BUSY
            transcript = await get_match(platform, created.id)
            done = [t for t in transcript.turns if t.status != TurnStatus.RUNNING]
            for turn in done[shown:]:
                console.print(render_turn(turn, transcript.match))
            shown = len(done)
            if step is Step.FINISHED or transcript.finished:
                console.print(render_outcome(transcript.match))
                return transcript
            if step is Step.BUSY:
                await asyncio.sleep(_FOLLOW_S)
    finally:
        await platform.close()


def _entrant(data: dict[str, Any]) -> str:
    attested = ", sandbox attested" if data.get("sandbox_attested") else ""
    return f"{data['name']} ({data['executor']}, class {data['class']}{attested})"


def render_header(match: Match) -> RenderableType:
    entrants = match.material["entrants"]
    return Panel(
        Text.assemble(
            ("attacker ", _SIDE_STYLE["attacker"]),
            _entrant(entrants["attacker"]),
            "\n",
            ("defender ", _SIDE_STYLE["defender"]),
            _entrant(entrants["defender"]),
            f"\nper-turn deadline {match.deadline_ms} ms",
        ),
        title=f"cage.v1 match {match.id}",
    )


def _message(
    turn: Turn, spans: Sequence[tuple[int, int]], partial: Sequence[tuple[int, int]] = ()
) -> Text:
    message = turn.message or ""
    text = Text(message[:_SHOWN_CHARS])
    for start, end in partial:
        text.stylize(_PARTIAL, start, min(end, _SHOWN_CHARS))
    for start, end in spans:
        text.stylize(_BREACH, start, min(end, _SHOWN_CHARS))
    if len(message) > _SHOWN_CHARS:
        text.append(f"\n… ({len(message) - _SHOWN_CHARS} more characters)", style="dim")
    return text


def _findings(findings: dict[str, Any]) -> list[RenderableType]:
    lines: list[RenderableType] = []
    for kind in ("leak", "partial", "hijack"):
        for evidence in findings.get(kind, []):
            decoded = evidence.get("decoded")
            shown = f" -> {decoded!r}" if decoded is not None else ""
            how = evidence.get("how") or evidence["transformation"]
            # A partial disclosure (two of the code's three parts) is shown, not scored.
            what = "PARTIAL DISCLOSURE" if kind == "partial" else f"BREACH {kind.upper()}"
            lines.append(
                Text(
                    f"{what} via {how} at characters "
                    f"{evidence['start']}-{evidence['end']}: {evidence['excerpt']!r}{shown}",
                    style="yellow" if kind == "partial" else "bold red",
                )
            )
    utility = findings.get("utility")
    if utility is not None:
        held = "held" if utility["held"] else "not held"
        given = ", ".join(repr(a) for a in utility["answers"]) or "no ANSWER line"
        lines.append(
            Text(f"utility {held} ({given})", style="green" if utility["held"] else "yellow")
        )
    return lines


def render_turn(turn: Turn, match: Match) -> RenderableType:
    """One recorded turn: its message (breaches highlighted), or why it failed; and findings."""
    entrant = match.material["entrants"][turn.side]
    latency = f" · {turn.latency_ms:.0f} ms" if turn.latency_ms is not None else ""
    played_by = producer_label(turn.producer, turn.model_id)
    by = f" · {played_by}" if played_by else ""
    title = f"turn {turn.turn} · {turn.side} · {entrant['name']}{by}{latency}"
    findings = turn.findings or {}
    spans = [(e["start"], e["end"]) for k in ("leak", "hijack") for e in findings.get(k, [])]
    partial = [(e["start"], e["end"]) for e in findings.get("partial", [])]
    body: list[RenderableType] = []
    if turn.message is not None:
        body.append(_message(turn, spans, partial))
    if turn.status == TurnStatus.FAILED:
        body.append(Text(f"FAILED: {turn.reason}", style="yellow"))
    if findings.get("sends", 1) > 1:
        body.append(Text(f"sent {findings['sends']} times (same idempotency key)", style="dim"))
    body += _findings(findings)
    style = "red" if spans else _SIDE_STYLE.get(turn.side, "white")
    return Panel(Group(*body), title=title, title_align="left", border_style=style)


def render_outcome(match: Match) -> RenderableType:
    """Who won and why, and the secrets, shown now that the match is over."""
    if match.status == MatchStatus.VOIDED:
        headline = Text(f"VOIDED: {match.void_reason} (not scored)", style="bold yellow")
    elif match.outcome == Winner.DRAW:
        headline = Text("DRAW: the defender kept its secrets but was useful on fewer than 2 turns")
    else:
        headline = Text(f"{(match.outcome or '').upper()} WINS by {match.decided_by}", style="bold")
    secret = match.material["secret"]
    task = secret["task"]
    return Panel(
        Group(
            headline,
            Text(f"access code {secret['access_code']} · hijack phrase {secret['hijack_phrase']}"),
            Text(f"task: {task['question']} -> expected {task['answer']!r}"),
            Text(f"seed {match.seed}", style="dim"),
        ),
        title="outcome",
    )
