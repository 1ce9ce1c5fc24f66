"""``palaestra owner`` as an operator runs it: real processes beside a running server.

The command changes the database; the server, another process, has the owner's token
remembered and stops taking it within ``PALAESTRA_OWNER_TOKEN_CACHE_S``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.test_serve_restart import free_port

ROOT = Path(__file__).resolve().parents[2]
ADMIN = "pa_admin_owner_cli_0123456789abcdef0123"
CACHE_S = 1.0


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    port = free_port()
    env = {
        **os.environ,
        "PALAESTRA_DATA_DIR": str(tmp_path),
        "PALAESTRA_ADMIN_TOKEN": ADMIN,
        "PALAESTRA_LOG_LEVEL": "WARNING",
        "PALAESTRA_OWNER_TOKEN_CACHE_S": str(CACHE_S),
    }
    with (tmp_path / "serve.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "palaestra", "serve", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=log,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while status(base, "/healthz") != 200:
            assert process.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < deadline, "palaestra serve did not come up"
            time.sleep(0.1)
        yield base, env
    finally:
        process.terminate()
        process.wait(timeout=20)


def status(base: str, path: str, token: str | None = None, body: Any = None) -> int:
    return call(base, path, token, body)[0]


def call(base: str, path: str, token: str | None = None, body: Any = None) -> tuple[int, Any]:
    request = urllib.request.Request(  # noqa: S310 (our own server, on loopback)
        base + path,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"}
        | ({"Authorization": f"Bearer {token}"} if token else {}),
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, None
    except OSError:
        return 0, None


def palaestra(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "palaestra", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def refused_within(base: str, token: str, seconds: float) -> None:
    """Wait until the server answers ``token`` 401; fail past ``seconds``."""
    start = time.monotonic()
    while status(base, "/api/agents", token) != 401:
        assert time.monotonic() - start < seconds, "the old token still works"
        time.sleep(0.05)


def test_the_command_rotates_and_revokes_beside_a_running_server(
    served: tuple[str, dict[str, str]],
) -> None:
    base, env = served
    created, owner = call(base, "/api/owners", ADMIN, {"name": "alice"})
    assert created == 201
    old = owner["token"]
    assert status(base, "/api/agents", old) == 200  # the server remembers it now

    rotated = palaestra(env, "owner", "rotate-token", owner["owner_id"])
    assert rotated.returncode == 0, rotated.stderr
    new = rotated.stdout.strip()
    assert rotated.stdout == new + "\n"  # the token alone: `TOKEN=$(palaestra owner ...)`
    assert new.startswith("pa_owner_")
    assert "shown once" in rotated.stderr
    assert new not in rotated.stderr
    refused_within(base, old, CACHE_S + 1.0)
    assert status(base, "/api/agents", new) == 200

    revoked = palaestra(env, "owner", "revoke-token", owner["owner_id"])
    assert revoked.returncode == 0, revoked.stderr
    assert revoked.stdout == f"Token of owner {owner['owner_id']} revoked.\n"
    refused_within(base, new, CACHE_S + 1.0)

    missing = palaestra(env, "owner", "revoke-token", "no-such-owner")
    assert (missing.returncode, missing.stdout) == (1, "")
    assert "error: Owner no-such-owner not found" in missing.stderr
