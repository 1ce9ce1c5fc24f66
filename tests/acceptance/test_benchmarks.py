"""Every benchmark under bench/ still runs: each at its ``--quick`` size, as a script.

Not timed: a quick run's figures mean nothing. Each must exit 0 (its own correctness
checks passed) and print its result lines, so that a change to the code a benchmark
drives cannot leave it broken unnoticed until someone runs ``make bench``. The chaos soak
(tests/acceptance/test_chaos_soak.py) and the local model's benchmark
(tests/integration/test_local_model.py) have tests of their own.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


@dataclass(frozen=True)
class Quick:
    script: str
    #: The services it needs: "postgres", "redis".
    needs: tuple[str, ...]
    #: Patterns of the lines it must print (re.MULTILINE).
    lines: tuple[str, ...]


QUICK = (
    Quick(
        "bulk.py",
        ("postgres",),
        (
            r"^SQLite \(writer thread\): batches of 20 rows",
            r"^PostgreSQL \(asyncpg\): batches of 20 rows",
            r"^  insertmanyvalues .* ms$",
            r"^PASS  every writer opened and ended every task of its batches$",
        ),
    ),
    Quick(
        "cage.py",
        ("postgres", "redis"),
        (
            r"^  sqlite +\d[\d,]* +\d[\d,]* +\d+\.\d\dx",
            r"^  workers2 +\d[\d,]* +\d[\d,]* +\d+\.\d\dx",
            r"^arena time per turn, sqlite, 2 matches played alone: ",
            r"^judge alone, 256 KiB reply: ",
            r"^correctness \(every match a draw on utility, six turns each sent once\): PASS$",
        ),
    ),
    Quick(
        "content.py",
        (),
        (
            r"^no local model: PALAESTRA_LOCAL_MODEL_ENABLED is false; the baseline alone$",
            r"^baseline \(canned\): distinct titles \d+/2, goal's words in the scout's fields ",
            r"^cage round robin: \d+ matches of \d+ fighters, 1 seed\(s\)",
            r"^\| transformed-secret \| ",
            r"^decided by: leak \d+, hijack \d+, defender \d+, draw \d+$",
            r"^published strengths: spread \d+\.\d\d log-odds",
            r"^PASS  the baseline passes the check and every match is decided$",
        ),
    ),
    Quick(
        "dispatch.py",
        (),
        (
            r"^dispatch \(200 tasks, concurrency 50, median of 1\): dispatcher [\d,]+ tasks/s",
            r"^completion \(100 per round, concurrency 50, median of 1\): endpoint [\d,]+ req/s",
            r"^memory: 200 dispatches in flight .* KB per in-flight task",
        ),
    ),
    Quick(
        "egress.py",
        (),
        (
            r"^median:  \(a\) bare aiohttp \d+ req/s   \(b\) EgressClient \d+ req/s$",
            r"^protocol\.sign: +\d+\.\d\d us/call",
            r"^protocol\.verify: +\d+\.\d\d us/call",
        ),
    ),
    Quick(
        "health.py",
        (),
        (
            r"^throughput \(200 agents, .*\): monitor [\d,]+ pings/s",
            r"^sustained: demand 200 pings/s, achieved [\d,]+ pings/s .* p99 \d+ ms",
        ),
    ),
    Quick(
        "live_pages.py",
        (),
        (
            r"^  reload +\d+ +\d+\.\d +\d+\.\d{3} +\d+\.\d\d   200: \d+$",
            r"^  live, unchanged +\d+ .*   304: \d+$",
            r"^  live, changing +\d+ .*   200: \d+, 304: \d+$",
            r"^live, unchanged: \d+% of the server CPU of reload$",
            r"^  run page, unchanged +\d+ .*304: \d+$",
            r"^  run page, changing +\d+ .*   200: \d+(, 304: \d+)?$",
            r"^PASS  every reload held the rows, unchanged polls were 304",
        ),
    ),
    Quick(
        "ratings.py",
        (),
        (
            r"^published fit: 400 matches, 20 fighters, 10 bootstrap resamples",
            r"^  solver\.solve .* largest error",
            r"^live update: 200 matches, median \d+ us",
            r"^stored live update: 100 scored matches applied .* a second pass applied 0$",
        ),
    ),
    Quick(
        "history.py",
        ("postgres",),
        (
            r"^sqlite: grown by 300 agents, 333 runs, 3,000 tasks, 30 matches, 20,000 events",
            r"^postgres: grown by 300 agents, 333 runs, 3,000 tasks, 30 matches, 20,000 events",
            r"^  overview +\d+\.\d +\d+\.\d +\d+\.\d\dx  (PASS|FAIL)$",
            r"^  agent page +\d+\.\d +\d+\.\d +\d+\.\d\dx  (PASS|FAIL)$",
            r"^  GET /api/agents +\d+\.\d +\d+\.\d +\d+\.\d\dx  (PASS|FAIL)$",
            r"^  health-monitor tick +\d+\.\d +\d+\.\d +\d+\.\d\dx  (PASS|FAIL)$",
            r"^  whole run \(house\) +\d+\.\d +\d+\.\d +\d+\.\d\dx  (PASS|FAIL)$",
            r"^sqlite: 6 days of 666 events and 100 tasks \(and receipts\) a day among 300 agents",
            r"^postgres: 6 days of 666 events and 100 tasks \(and receipts\) a day",
            r"^ +4 +[\d,]+ +1,333 +[\d,]+ +\d+\.\d +\d+\.\d$",
            r"^  the largest tables at the end \(MiB, indexes included\): \w+ [\d,]+, ",
            r"^  the database grew .* agent events held at 1,333 \(at most 1,998\)  PASS",
            r"^PASS  every read answered 200 and the roll-ups equal the raw rows$",
        ),
    ),
    Quick(
        "runs.py",
        ("postgres", "redis"),
        (
            r"^  sqlite +[\d,]+ +[\d,]+ +\d+\.\d\dx",
            r"^  workers2 +[\d,]+ +[\d,]+ +\d+\.\d\dx",
            r"^PASS  sqlite: 14 runs, 238 tasks: every run COMPLETED",
            r"^PASS  workers2: 14 runs, 238 tasks: every run COMPLETED",
        ),
    ),
    Quick(
        "scale.py",
        ("postgres", "redis"),
        (
            r"^ +1 +100 +100 +[\d,]+ +[\d,]+ +(<=|>) \S+ s +(<=|>) \S+ s  (within|BEHIND) schedule",
            r"^ +2 +100 +100 +[\d,]+ +[\d,]+ +(<=|>) \S+ s +(<=|>) \S+ s  (within|BEHIND) schedule",
            r"^1 worker process\(es\): ",
            r"^2 worker process\(es\): ",
            r"^PASS  every ping succeeded and every agent stayed ACTIVE while the workers kept up$",
        ),
    ),
)


def test_every_benchmark_has_a_smoke_test() -> None:
    scripts = {path.name for path in BENCH.glob("[!_]*.py")}
    elsewhere = {"chaos.py", "local_model.py"}
    assert scripts == {quick.script for quick in QUICK} | elsewhere


@pytest.mark.parametrize(
    "quick",
    [
        pytest.param(q, id=q.script, marks=[getattr(pytest.mark, need) for need in q.needs])
        for q in QUICK
    ],
)
def test_the_benchmark_runs_at_its_quick_size(quick: Quick, request: pytest.FixtureRequest) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALAESTRA_")}
    env["PALAESTRA_LOCAL_MODEL_ENABLED"] = "false"
    if "postgres" in quick.needs:
        env["PALAESTRA_BENCH_POSTGRES_URL"] = request.getfixturevalue("postgres_url")
    if "redis" in quick.needs:
        env["PALAESTRA_BENCH_REDIS_URL"] = request.getfixturevalue("redis_url")
    ran = subprocess.run(
        [sys.executable, str(BENCH / quick.script), "--quick"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    report = f"exit {ran.returncode}\n{ran.stdout}\n{ran.stderr}"
    assert ran.returncode == 0, report
    for line in quick.lines:
        assert re.search(line, ran.stdout, re.MULTILINE), f"no line like {line!r}:\n{report}"
