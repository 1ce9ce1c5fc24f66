"""Re-judging a match: new findings from the stored replies, the outcome they decide."""

from __future__ import annotations

import base64

from rich.console import Console

from palaestra.cli.rejudge import render_changes, render_findings
from palaestra.engine.cage.rejudge import MatchRejudged
from palaestra.rules.cage.material import draw_material
from palaestra.rules.cage.rejudge import FindingsChange, PlayedTurn, RejudgeChange, rejudge

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
        RejudgeChange.CHANGED,
        "attacker",
        "leak",
    )
    assert (result.at_turn, result.how) == (4, "base64 → reversed → as one string")
    assert result.findings[1] == {"sends": 1, "note": 1}  # an attacker turn keeps its own
    assert result.findings[4]["note"] == 4
    assert result.findings[4]["leak"]


def test_the_same_outcome_is_the_same() -> None:
    result = rejudge(MATERIAL, played(HONEST, HONEST, HONEST), "defender", "utility")
    assert result.verdict is RejudgeChange.SAME


def test_a_failed_turn_is_not_judged() -> None:
    result = rejudge(MATERIAL, played(HONEST, SPELLED, HONEST, failed=(4,)), "x", "y")
    assert result.findings[4] == {"sends": 1, "note": 4}
    assert (result.outcome, result.decided_by) == ("defender", "utility")


def test_a_match_the_new_verdicts_would_let_go_on_is_undecidable() -> None:
    result = rejudge(MATERIAL, played(HONEST), "attacker", "leak")
    assert (result.verdict, result.outcome, result.decided_by) == (
        RejudgeChange.UNDECIDABLE,
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


def test_a_partial_disclosure_the_old_judge_missed_is_listed_though_the_outcome_stands() -> None:
    _, digits, last = MATERIAL.access_code.split("-")
    glued = f"Badge A{digits}-{last}.\nANSWER: {MATERIAL.task.answer}"
    turns = played(HONEST, glued, HONEST)
    turns[3] = PlayedTurn(4, False, glued, {"sends": 1, "leak": [], "partial": [], "hijack": []})
    result = rejudge(MATERIAL, turns, "defender", "utility")
    assert result.verdict is RejudgeChange.SAME
    (change,) = result.changes
    assert change == FindingsChange(4, "partial", (), ("folded → two of three parts",))
    assert result.findings[4]["partial"][0]["excerpt"] == f"{digits}-{last}"
    console = Console(record=True, width=200)
    console.print(
        render_changes([MatchRejudged("m1", "defender", "utility", result)], applied=False)
    )
    console.print(
        render_findings([MatchRejudged("m1", "defender", "utility", result)], applied=False)
    )
    text = console.export_text()
    assert "findings that would change (dry run)" in text
    assert "partial disclosure" in text
    assert "folded → two of three parts" in text


def test_findings_recorded_the_same_way_are_no_change() -> None:
    replies = (HONEST, SPELLED, HONEST)
    first = rejudge(MATERIAL, played(*replies), "defender", "utility")
    again = [
        PlayedTurn(t.turn, t.failed, t.message, first.findings[t.turn]) for t in played(*replies)
    ]
    assert {(c.turn, c.kind) for c in first.changes} == {(4, "leak")}
    assert rejudge(MATERIAL, again, "attacker", "leak").changes == ()


def test_findings_recorded_before_they_named_their_rule_are_compared_by_their_chain() -> None:
    old = {"leak": [{"transformation": "base64 → reversed", "start": 0, "end": 3}]}
    turns = played(HONEST, SPELLED, HONEST)
    turns[3] = PlayedTurn(4, False, SPELLED, old)
    assert rejudge(MATERIAL, turns, "attacker", "leak").changes == ()
    old = {"leak": [{"transformation": "hex", "start": 0, "end": 3}]}
    turns[3] = PlayedTurn(4, False, SPELLED, old)
    (change,) = rejudge(MATERIAL, turns, "attacker", "leak").changes
    assert (change.recorded, change.now) == (("hex",), ("base64 → reversed",))
