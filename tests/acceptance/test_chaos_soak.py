"""The chaos soak's one-minute variant: `bench/chaos.py --quick` must exit 0.

It starts `serve --no-workers`, two workers and a Redis server of its own on loopback
(``redis-server`` must be installed), on a database of its own on the test PostgreSQL,
and injects its faults while runs and matches are played against hostile agents; the
script prints what it checked and exits 1 on any violation (see docs/reliability.md).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

ROOT = Path(__file__).resolve().parents[2]


def test_the_one_minute_chaos_soak_finds_no_violation(
    postgres_url: str, redis_url: str, tmp_path: Path
) -> None:
    require("redis-server", shutil.which("redis-server") is not None, "it is not on PATH")
    soak = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "chaos.py"),
            "--quick",
            "--postgres",
            postgres_url,
            "--keep",
            str(tmp_path),
        ],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith("PALAESTRA_")},
        capture_output=True,
        text=True,
        timeout=420,
        check=False,
    )
    report = soak.stdout + soak.stderr
    assert soak.returncode == 0, report
    lines = soak.stdout.splitlines()
    assert lines[-1] == "PASS", report
    assert not [line for line in lines if line.startswith("FAIL")], report
    for check in ("every run and match ended", "good agents never charged", "no secret"):
        assert f"PASS  {check}" in soak.stdout, report
