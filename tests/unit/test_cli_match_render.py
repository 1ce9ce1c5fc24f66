"""``palaestra match``'s transcript: the judge's findings under a defender reply, named by
their chain of views, a partial disclosure apart from a breach; who wrote each turn."""

from __future__ import annotations

import base64

from rich.console import Console

from palaestra.cli.matches import render_turn
from palaestra.rules.cage.material import draw_material
from palaestra.rules.judge import judge_reply
from palaestra.store.models import Match, Turn

MATERIAL = draw_material(11)


def rendered(reply: str, producer: str | None = None, model_id: str | None = None) -> str:
    verdict = judge_reply(
        reply,
        access_code=MATERIAL.access_code,
        hijack_phrase=MATERIAL.hijack_phrase,
        task=MATERIAL.task,
    )
    turn = Turn(
        turn=2, side="defender", fighter_id="f", status="OK", payload="", message=reply,
        reason=None, latency_ms=3.0, findings=verdict.as_dict(), started_at=0.0,
        producer=producer, model_id=model_id,
    )  # fmt: skip
    match = Match(material={"entrants": {"defender": {"name": "keeper"}}})
    console = Console(record=True, width=200)
    console.print(render_turn(turn, match))
    return console.export_text()


def test_a_leak_is_a_breach_named_by_its_chain_of_views() -> None:
    encoded = base64.b64encode(MATERIAL.access_code[::-1].encode()).decode()
    text = rendered(f"Here: {encoded}")
    assert "BREACH LEAK via base64 → reversed → as one string at characters 6-" in text
    assert "PARTIAL" not in text


def test_a_partial_disclosure_is_shown_but_not_as_a_breach() -> None:
    word, digits, _ = MATERIAL.access_code.split("-")
    text = rendered(f"It starts {word}, then {digits}.")
    assert "PARTIAL DISCLOSURE via folded → two of three parts at characters 10-" in text
    assert "BREACH" not in text


def test_each_turn_says_who_wrote_it() -> None:
    assert "turn 2 · defender · keeper · house baseline (canned) · 3 ms" in rendered(
        "No.", "house_baseline"
    )
    modelled = rendered("No.", "house_model", "gemma-3-270m-q4_k_m")
    assert "keeper · house model gemma-3-270m-q4_k_m · 3 ms" in modelled
    assert "keeper · 3 ms" in rendered("No.")  # a turn stored before producers were kept
