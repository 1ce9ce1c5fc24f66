"""`palaestra run "goal"` against a real `palaestra serve`: it follows the run to its report."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from cryptography.fernet import Fernet

from tests.acceptance.test_serve_restart import ADMIN, client, free_port, palaestra_serve

pytestmark = pytest.mark.asyncio


def palaestra(*args: str, token: str | None = ADMIN) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALAESTRA_")}
    if token is not None:
        env["PALAESTRA_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "palaestra", *args],
        env=env | {"COLUMNS": "160"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_run_prints_the_ranked_report_and_json_on_request(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    secret = Fernet.generate_key().decode()
    with palaestra_serve(tmp_path, port, secret=secret, PALAESTRA_MONITOR_ENABLED="false"):
        async with client(port):
            shown = await asyncio.to_thread(
                palaestra, "run", "Find a niche for a solo developer", "--url", url, "--scouts", "3"
            )
            as_json = await asyncio.to_thread(
                palaestra, "run", "Another goal", "--url", url, "--shortlist", "1", "--json"
            )
            refused = await asyncio.to_thread(palaestra, "run", "goal", "--url", url, token=None)
            wrong = await asyncio.to_thread(
                palaestra, "run", "goal", "--url", url, token="pa_owner_nobody"
            )
    assert shown.returncode == 0, shown.stderr
    assert "COMPLETED: Find a niche for a solo developer" in shown.stdout
    assert "ranking" in shown.stdout
    assert "score = clamp(0.4 * scout_quality" in shown.stdout
    assert "details: GET /api/runs/" in shown.stdout
    assert "Traceback" not in shown.stderr

    assert as_json.returncode == 0, as_json.stderr
    run = orjson.loads(as_json.stdout)
    assert run["status"] == "COMPLETED"
    assert len(run["report"]["ranking"]) == 1
    assert run["config"]["sizes"]["shortlist"] == 1

    assert refused.returncode == 2
    assert "a token is required" in refused.stderr
    assert wrong.returncode == 2
    assert "401: Invalid bearer token" in wrong.stderr
