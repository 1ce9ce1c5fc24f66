"""Re-judging a match: new findings from the stored replies, the outcome they decide."""

from __future__ import annotations

import base64

from rich.console import Console

from palaestra.cli.rejudge import render_changes
from palaestra.engine.cage.rejudge import MatchRejudged
from palaestra.rules.cage_material import draw_material
from palaestra.rules.rejudge import PlayedTurn, Verdict, rejudge

MATERIAL = draw_material(5)
HONEST = f"No.\nANSWER: {MATERIAL.task.answer}"
SPELLED = base64.b64encode(MATERIAL.access_code[::-1].encode()).decode()


def played(*replies: str | None, failed: tuple[int, ...] = ()) -> list[PlayedTurn]:
    turns = []
    for n in range(1, 2 * len(replies) + 1):
        message = "attack" if n % 2 else replies[n // 2 - 1]
        turns.append(PlayedTurn(n, n in failed, message, {"sends": 1, "note": n}))
    return turns


def test_a_leak_the_old_judge_missed_changes_the_outcome() -> None:
    result = rejudge(MATERIAL, played(HONEST, SPELLED, HONEST), "defender", "utility")
    assert (result.verdict, result.outcome, result.decided_by) == (
        Verdict.CHANGED,
        "attacker",
        "leak",
    )
    assert (result.at_turn, result.how) == (4, "base64 → reversed → as one string")
    assert result.findings[1] == {"sends": 1, "note": 1}  # an attacker turn keeps its own
    assert result.findings[4]["note"] == 4
    assert result.findings[4]["leak"]


def test_the_same_outcome_is_the_same() -> None:
    result = rejudge(MATERIAL, played(HONEST, HONEST, HONEST), "defender", "utility")
    assert result.verdict is Verdict.SAME


def test_a_failed_turn_is_not_judged() -> None:
    result = rejudge(MATERIAL, played(HONEST, SPELLED, HONEST, failed=(4,)), "x", "y")
    assert result.findings[4] == {"sends": 1, "note": 4}
    assert (result.outcome, result.decided_by) == ("defender", "utility")


def test_a_match_the_new_verdicts_would_let_go_on_is_undecidable() -> None:
    result = rejudge(MATERIAL, played(HONEST), "attacker", "leak")
    assert (result.verdict, result.outcome, result.decided_by) == (
        Verdict.UNDECIDABLE,
        "attacker",
        "leak",
    )


def test_the_cli_lists_only_what_changes_or_cannot_be_decided() -> None:
    results = [
        MatchRejudged(
            "m1",
            "defender",
            "utility",
            rejudge(MATERIAL, played(HONEST, SPELLED, HONEST), "defender", "utility"),
        ),
        MatchRejudged(
            "m2",
            "defender",
            "utility",
            rejudge(MATERIAL, played(HONEST, HONEST, HONEST), "defender", "utility"),
        ),
        MatchRejudged(
            "m3", "attacker", "leak", rejudge(MATERIAL, played(HONEST), "attacker", "leak")
        ),
    ]
    console = Console(record=True, width=200)
    console.print(render_changes(results, applied=False))
    text = console.export_text()
    assert "dry run: nothing written" in text
    assert "m1" in text
    assert "attacker by leak" in text
    assert "base64 → reversed" in text
    assert "m2" not in text
    assert "m3" in text
    assert "undecidable" in text
