"""`palaestra demo` from the repository: a populated arena, and a clean stop on Ctrl-C."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from palaestra.demo import ADMIN_TOKEN, LINEUP
from palaestra.protocol import Phase
from palaestra.rules.runs.answer_check import answer_problems
from tests.acceptance.demo_process import alive, descendants, palaestra_demo

GOOD = {
    "scout-atlas",
    "scout-beacon",
    "scout-plain",
    "builder-forge",
    "analyst-lens",
    "analyst-tortoise",
}


#: The library's fighters in the demo, attacker and defender: how each of their matches ends
#: (the library's outcome matrix, tests/unit/test_cage_library.py).
LIBRARY_OUTCOMES = {
    ("transformed-secret", "keyword-filter"): ("attacker", "leak"),
    ("transformed-secret", "output-filter"): ("attacker", "leak"),
    ("transformed-secret", "allow-list"): ("defender", "utility"),
    ("persona-role-play", "keyword-filter"): ("draw", "utility"),
    ("persona-role-play", "output-filter"): ("attacker", "hijack"),
    ("persona-role-play", "allow-list"): ("defender", "utility"),
    ("multi-turn-escalation", "keyword-filter"): ("attacker", "leak"),
    ("multi-turn-escalation", "output-filter"): ("attacker", "hijack"),
    ("multi-turn-escalation", "allow-list"): ("defender", "utility"),
}


def library_outcomes(matches: list[dict[str, Any]]) -> dict[tuple[str, str], Any] | None:
    """The outcomes of the library's matches, once every one of them is scored."""
    scored = {
        (m["attacker"]["name"], m["defender"]["name"]): (m["outcome"], m["decided_by"])
        for m in matches
        if m["status"] == "SCORED"
    }
    found = {pair: scored.get(pair) for pair in LIBRARY_OUTCOMES}
    return found if None not in found.values() else None


def has_rows(body: Any) -> bool:
    if isinstance(body, list):
        return bool(body)
    if isinstance(body, dict):
        return any(isinstance(value, list) and value for value in body.values())
    return False


def test_the_demo_populates_the_arena_and_stops_every_process(tmp_path: Path) -> None:
    with palaestra_demo(tmp_path / "demo-data", health_scale=0.02) as demo:
        demo.wait_ready()
        output = demo.text()
        assert f"admin token        {ADMIN_TOKEN}" in output
        assert "health pings every 6s while ACTIVE" in output
        agents = demo.agents()
        assert {name for name, a in agents.items() if a["status"] == "ACTIVE"} == GOOD
        assert agents["scout-sloppy"]["status"] == "PENDING"
        assert [w.split(":")[0] for w in agents["scout-plain"]["warnings"]] == [
            "accepts forged signatures"
        ]
        assert {name for name in GOOD if agents[name]["warnings"]} == {"scout-plain"}
        # Each child is a real process: the server and one per agent.
        children = descendants(demo.process.pid)
        assert len(children) >= 1 + len(LINEUP)

        paths = demo.paths()
        if "/api/runs" in paths:
            runs = demo.call("GET", "/api/runs")
            assert len(runs) == 1
            run_id = runs[0]["run_id"]
            report = demo.wait_until(
                "the run has a report",
                lambda: demo.call("GET", f"/api/runs/{run_id}").get("report"),
                timeout_s=120,
            )
            # Every ranked candidate reads as an idea: its scout's answer passes the check
            # the house's own answers must pass (words, no debris, fields that differ).
            goal = demo.call("GET", f"/api/runs/{run_id}")["goal"]
            assert report["ranking"], report
            for entry in report["ranking"]:
                (scout,) = [t for t in entry["tasks"] if t["phase"] == "SCOUT"]
                task = demo.call("GET", f"/api/runs/{run_id}/tasks/{scout['task_id']}")
                problems = answer_problems(Phase.SCOUT, task["output"], goal=goal)
                assert not problems, (entry["title"], [str(p) for p in problems])
        else:
            assert "no runs API yet" in output
        if "/api/matches" in paths:
            # The demo's two; a matchmaker may add more meanwhile.
            demo.wait_until(
                "the demo's matches are finished",
                lambda: (
                    sum(
                        m["status"] in ("SCORED", "VOIDED")
                        for m in demo.call("GET", "/api/matches")
                    )
                    >= 2
                ),
                timeout_s=120,
            )
            # Outcomes differ: attackers win by a leak and by a hijack, defenders hold.
            outcomes = demo.wait_until(
                "the library's matches are scored",
                lambda: library_outcomes(demo.call("GET", "/api/matches?limit=200")),
                timeout_s=180,
            )
            assert outcomes == LIBRARY_OUTCOMES
        if "/api/leaderboard" in paths:
            demo.wait_until(
                "the leaderboard has rows",
                lambda: has_rows(demo.call("GET", "/api/leaderboard?arena=cage")),
                timeout_s=120,
            )
            # Published once the library's matches are in: the fighters' strengths (attack of
            # the attackers, defence of the defenders) differ, by at least half a unit of
            # log-odds between the strongest and the weakest.
            demo.call("POST", "/api/leaderboard/recompute?arena=cage")
            board = demo.call("GET", "/api/leaderboard?arena=cage")
            strengths = [
                f[side]["value"]
                for f in board["fighters"]
                for side in ("attack", "defence")
                if f[side]
            ]
            assert len(strengths) >= 6, board["fighters"]
            assert max(strengths) - min(strengths) >= 0.5, strengths

        started = time.monotonic()
        assert demo.stop() == 0
        assert time.monotonic() - started < 20
        assert [pid for pid in children if alive(pid)] == []
        output = demo.text()
        assert "Traceback" not in output
        assert "have exited" in output
    server_log = (tmp_path / "demo-data" / "logs" / "server.log").read_text()
    assert "Palaestra stopped cleanly" in server_log
