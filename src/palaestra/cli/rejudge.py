"""``palaestra rejudge``: judge the stored cage.v1 matches again with the current judge.

With ``--dry-run`` nothing is written: the command lists the matches whose outcome would
change (and those the new verdicts could not decide), then every defender turn whose
findings would change (a leak, partial disclosure or hijack found, lost, or found another
way, the outcome changed or not), so an operator sees what applying a new ruleset does
before doing it. Without it, the findings and changed outcomes are
written; run ``palaestra leaderboard --recompute`` afterwards to publish the leaderboard
they make.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from palaestra.cli.app import app
from palaestra.cli.common import load_settings, on_platform
from palaestra.engine.cage.rejudge import MatchRejudged, rejudge_matches
from palaestra.rules.cage.rejudge import RejudgeChange

__all__ = ["rejudge", "render_changes", "render_findings"]


def _said(outcome: str | None, decided_by: str | None) -> str:
    return f"{outcome or '-'} by {decided_by or '-'}"


def render_changes(results: Sequence[MatchRejudged], *, applied: bool) -> Table:
    """The matches re-judging changes or cannot decide, one row each."""
    title = "re-judged" if applied else "would change (dry run: nothing written)"
    table = Table("match", "recorded", "now", "decisive turn", "found by", title=title)
    for item in results:
        if item.now.verdict is RejudgeChange.SAME:
            continue
        now = (
            "undecidable: left as it is"
            if item.now.verdict is RejudgeChange.UNDECIDABLE
            else _said(item.now.outcome, item.now.decided_by)
        )
        turn = str(item.now.at_turn) if item.now.at_turn else "-"
        table.add_row(
            item.match_id, _said(item.outcome, item.decided_by), now, turn, item.now.how or "-"
        )
    return table


def render_findings(results: Sequence[MatchRejudged], *, applied: bool) -> Table:
    """Each defender turn whose findings re-judging changes, one row per kind of finding."""
    title = "findings re-judged" if applied else "findings that would change (dry run)"
    table = Table("match", "turn", "finding", "recorded", "now", title=title)
    for item in results:
        for change in item.now.changes:
            table.add_row(
                item.match_id,
                str(change.turn),
                "partial disclosure" if change.kind == "partial" else change.kind,
                "\n".join(change.recorded) or "-",
                "\n".join(change.now) or "-",
            )
    return table


@app.command()
def rejudge(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show which outcomes would change; write nothing.")
    ] = False,
    match_ids: Annotated[
        list[str] | None, typer.Option("--match", help="Only this match (may be repeated).")
    ] = None,
) -> None:
    """Judge every scored cage.v1 match again with the current judge."""
    results = on_platform(
        load_settings(),
        lambda platform: rejudge_matches(platform, apply=not dry_run, match_ids=match_ids),
    )
    console = Console()
    console.print(render_changes(results, applied=not dry_run))
    console.print(render_findings(results, applied=not dry_run))
    counts = {v: sum(r.now.verdict is v for r in results) for v in RejudgeChange}
    new_findings = sum(bool(r.now.changes) for r in results)
    console.print(
        f"{len(results)} scored matches: {counts[RejudgeChange.CHANGED]} "
        f"{'changed' if not dry_run else 'would change'}, {counts[RejudgeChange.UNDECIDABLE]} "
        f"undecidable, {counts[RejudgeChange.SAME]} the same; the findings of {new_findings} "
        f"{'changed' if not dry_run else 'would change'}"
    )
