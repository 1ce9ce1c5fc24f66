"""`palaestra serve` names a weak admin token at start, and never shows the token."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from tests.acceptance.test_serve_restart import ADMIN, client, free_port, palaestra_serve

pytestmark = pytest.mark.asyncio

STRONG = "pa_admin_" + "k" * 40


async def started_output(tmp_path: Path, token: str) -> str:
    port = free_port()
    secret = Fernet.generate_key().decode()
    with palaestra_serve(
        tmp_path,
        port,
        secret=secret,
        PALAESTRA_ADMIN_TOKEN=token,
        PALAESTRA_MONITOR_ENABLED="false",
    ) as process:
        async with client(port) as call:
            assert (await call("GET", "/api/agents", headers={"Authorization": f"Bearer {token}"}))[
                0
            ] == 200  # weak or not, the token works
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)
        assert process.stdout is not None
        return process.stdout.read().decode()


async def test_a_short_admin_token_is_warned_about(tmp_path: Path) -> None:
    output = await started_output(tmp_path, ADMIN)
    assert f"warning: PALAESTRA_ADMIN_TOKEN is {len(ADMIN)} characters long" in output
    assert "weak configuration" in output  # and the app's log says it too
    assert ADMIN not in output


async def test_a_long_admin_token_is_not(tmp_path: Path) -> None:
    output = await started_output(tmp_path, STRONG)
    assert "PALAESTRA_ADMIN_TOKEN" not in output
    assert STRONG not in output
