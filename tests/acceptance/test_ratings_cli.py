"""``palaestra leaderboard``, ``export`` and ``matchmaking``, run as a user runs them."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from palaestra.platform import Platform
from palaestra.settings import Settings
from tests.integration.arena_rows import add_agent, add_fighter, add_match, add_owner, add_run

PALAESTRA = [sys.executable, "-m", "palaestra"]
FIGHTERS = [
    ("shield-harness", "harness", "rogue"),
    ("wall-harness", "harness", "academic"),
    ("bare-model-a", "model", "rogue"),
    ("bare-model-b", "model", "academic"),
    ("house-one", "house", "independent"),
]


async def _seed(data: Path) -> None:
    platform = await Platform.open(Settings(_env_file=None, data_dir=data))
    try:
        ids = []
        for name, kind, fighter_class in FIGHTERS:
            owner = await add_owner(platform, name)
            ids.append(
                await add_fighter(
                    platform, owner, name, entrant_type=kind, fighter_class=fighter_class
                )
            )
        outcomes = ("attacker", "defender", "draw")
        for round_ in range(4):
            for i, attacker in enumerate(ids):
                for j, defender in enumerate(ids):
                    if i != j:
                        # Harnesses (the first two) defend best.
                        outcome = "defender" if j < 2 else outcomes[(i + j + round_) % 3]
                        await add_match(platform, attacker, defender, outcome)
        owner = await add_owner(platform, "edge")
        scout = await add_agent(platform, owner, "swift-scout", "SCOUT", reputation=0.8)
        await add_run(
            platform,
            [{"agent_id": scout, "status": "SUCCEEDED", "latency_ms": 900.0, "contribution": 1.0}],
        )
    finally:
        await platform.close()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("ratings-cli") / "data"
    asyncio.run(_seed(data))
    return data


def run(
    data: Path, *args: str, code: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PALAESTRA_DATA_DIR": str(data),
        "PALAESTRA_LEADERBOARD_RESAMPLES": "20",
        "COLUMNS": "220",
        **(env or {}),
    }
    command = [sys.executable, "-c", code, *args] if code else [*PALAESTRA, *args]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=data.parent,
    )


def test_leaderboard_prints_every_table(data_dir: Path) -> None:
    result = run(data_dir, "leaderboard")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for name, _, _ in FIGHTERS:
        assert name in out
    assert "published ratings" in out
    assert "entrant types" in out
    assert "harness - model" in out
    assert "live ratings" in out
    assert "16-0-0" in out  # each harness defended all 16 of its matches
    assert "over 80 scored matches" in out


def test_leaderboard_shows_limit_rows_of_each_table(data_dir: Path) -> None:
    result = run(data_dir, "leaderboard", "--limit", "2")
    assert result.returncode == 0, result.stderr
    live = result.stdout.split("live ratings", 1)[1]
    assert sum(name in live for name, _, _ in FIGHTERS) == 2
    published = result.stdout.split("published ratings", 1)[1].split("entrant types", 1)[0]
    assert sum(name in published for name, _, _ in FIGHTERS) == 2


def test_leaderboard_filters(data_dir: Path) -> None:
    result = run(data_dir, "leaderboard", "--entrant-type", "model", "--recompute")
    assert result.returncode == 0, result.stderr
    assert "bare-model-a" in result.stdout
    assert "shield-harness" not in result.stdout
    result = run(data_dir, "leaderboard", "--class", "rogue")
    assert result.returncode == 0, result.stderr
    assert "shield-harness" in result.stdout
    assert "wall-harness" not in result.stdout


def test_the_edgearena_leaderboard(data_dir: Path) -> None:
    result = run(data_dir, "leaderboard", "--arena", "edgearena")
    assert result.returncode == 0, result.stderr
    assert "SCOUT agents by reputation" in result.stdout
    assert "swift-scout" in result.stdout
    assert "100%" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["leaderboard", "--arena", "chess"], "arena must be cage or edgearena"),
        (["leaderboard", "--arena", "chess", "--recompute"], "arena must be cage or edgearena"),
        (["leaderboard", "--role", "SCOUT"], "role filters the edgearena leaderboard"),
        (["matchmaking", "--pause", "--resume"], "exclude each other"),
    ],
)
def test_mistakes_exit_2_with_the_reason(data_dir: Path, args: list[str], message: str) -> None:
    result = run(data_dir, *args)
    assert result.returncode == 2
    assert message in result.stderr


def test_export_jsonl(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    result = run(data_dir, "export", "--out", str(out), "--since", "1970-01-01")
    assert result.returncode == 0, result.stderr
    assert "wrote 80 matches and 1 runs" in result.stdout
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    assert manifest["counts"] == {"matches": 80, "runs": 1}
    assert manifest["since"] == 0.0
    assert len((out / "matches.jsonl").read_bytes().splitlines()) == 80


def test_export_rejects_a_bad_since(data_dir: Path, tmp_path: Path) -> None:
    result = run(data_dir, "export", "--out", str(tmp_path / "x"), "--since", "last tuesday")
    assert result.returncode == 2
    assert "ISO 8601" in result.stderr


def test_export_parquet_without_pyarrow_says_how_to_install_it(
    data_dir: Path, tmp_path: Path
) -> None:
    code = (
        "import sys; sys.modules['pyarrow'] = None; sys.argv = ['palaestra', *sys.argv[1:]]; "
        "from palaestra.cli import main; main()"
    )
    out = tmp_path / "pq"
    result = run(data_dir, "export", "--format", "parquet", "--out", str(out), code=code)
    assert result.returncode == 2
    assert "pip install 'palaestra[parquet]'" in result.stderr
    assert not out.exists()


def test_export_parquet(data_dir: Path, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "pq"
    result = run(data_dir, "export", "--format", "parquet", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert pq.read_table(out / "matches.parquet").num_rows == 80


def test_matchmaking_pause_and_resume(data_dir: Path) -> None:
    result = run(data_dir, "matchmaking", "--pause")
    assert result.returncode == 0, result.stderr
    assert "pause switch: paused" in result.stdout
    assert "matchmaking: disabled" in result.stdout  # off unless the setting turns it on
    assert "pause switch: paused" in run(data_dir, "matchmaking").stdout
    result = run(data_dir, "matchmaking", "--resume", env={"PALAESTRA_MATCHMAKING_ENABLED": "1"})
    assert "matchmaking: enabled" in result.stdout
    assert "pause switch: off" in result.stdout
    assert "scheduling now: yes" in result.stdout
    assert "open matches: 0" in result.stdout
