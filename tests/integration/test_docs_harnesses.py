"""The minimal cage.v1 harnesses of the cage guide, run as written, pass `palaestra check`."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from palaestra.checks import Arena, all_passed, run_checks
from palaestra.checks.conformance import cage_check_names
from palaestra.clock import SystemClock
from palaestra.egress import EgressClient, EgressPolicy
from tests.integration.servers import closed_port

CAGE_PAGE = Path(__file__).resolve().parents[2] / "docs" / "agents" / "cage.md"


def harness_source(title: str) -> str:
    blocks = re.findall(r'```\w+ title="([^"]+)"\n(.*?)```', CAGE_PAGE.read_text(), re.DOTALL)
    sources: dict[str, str] = dict(blocks)
    return sources[title]


@asynccontextmanager
async def running(command: list[str], port: int) -> AsyncIterator[str]:
    process = await asyncio.create_subprocess_exec(
        *command,
        env={**os.environ, "PORT": str(port)},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        for _ in range(200):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                if process.returncode is not None:
                    assert process.stderr
                    pytest.fail((await process.stderr.read()).decode())
                await asyncio.sleep(0.05)
                continue
            writer.close()
            await writer.wait_closed()
            break
        else:
            pytest.fail("the harness never listened")
        yield f"http://127.0.0.1:{port}/"
    finally:
        if process.returncode is None:
            process.terminate()
        await asyncio.wait_for(process.communicate(), timeout=10)


async def check(url: str) -> None:
    async with EgressClient(EgressPolicy.allowing(["127.0.0.0/8"])) as egress:
        results = await run_checks(egress, url, Arena.CAGE, clock=SystemClock())
    assert [r.name for r in results] == cage_check_names()
    assert [(r.name, r.reason) for r in results if not r.passed] == []
    assert all_passed(results)


async def test_the_python_harness_passes_the_cage_checks(tmp_path: Path) -> None:
    script = tmp_path / "harness.py"
    script.write_text(harness_source("harness.py"))
    async with running([sys.executable, str(script)], closed_port()) as url:
        await check(url)


async def test_the_node_harness_passes_the_cage_checks(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = tmp_path / "harness.js"
    script.write_text(harness_source("harness.js"))
    async with running([node, str(script)], closed_port()) as url:
        await check(url)
