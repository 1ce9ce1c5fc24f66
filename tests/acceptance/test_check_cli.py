"""``palaestra agent serve`` and ``palaestra check``, run as a user runs them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

PALAESTRA = [sys.executable, "-m", "palaestra"]
ROOT = Path(__file__).resolve().parents[2]
KEY = "ea_live_acceptance_8"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PALAESTRA, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


def wait_until_up(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the agent exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1) as response:  # noqa: S310 (loopback)
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"{url} did not come up")


def serve(target: str, *extra: str) -> Iterator[str]:
    port = free_port()
    command = [*PALAESTRA, "agent", "serve", target, "--port", str(port), "--log-level", "warning"]
    yield from serve_command([*command, *extra], f"http://127.0.0.1:{port}/")


def serve_command(command: list[str], url: str, env: dict[str, str] | None = None) -> Iterator[str]:
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith("PALAESTRA_AGENT_")}
        | (env or {}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until_up(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def scout_url() -> Iterator[str]:
    yield from serve("examples.scout:app", "--key", KEY)


@pytest.fixture(scope="module")
def plain_scout_url() -> Iterator[str]:
    """The agent written without the SDK, run as its author runs it."""
    port = free_port()
    command = [sys.executable, "examples/plain_scout.py", "--port", str(port)]
    url = f"http://127.0.0.1:{port}/agent"
    yield from serve_command(command, url, env={"EDGE_AGENT_KEY": KEY})


@pytest.fixture(scope="module")
def fighter_url() -> Iterator[str]:
    yield from serve("examples.cage_fighter")  # the attribute defaults to app


def test_check_passes_the_example_scout_as_json(scout_url: str) -> None:
    result = run(
        "check", scout_url, "--role", "scout", "--key", KEY, "--allow", "127.0.0.0/8", "--json"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = orjson.loads(result.stdout)  # stdout is only the JSON: progress went to stderr
    assert report["passed"] is True
    assert (report["url"], report["arena"], report["role"]) == (scout_url, "edgearena", "SCOUT")
    assert [check["name"] for check in report["checks"]][:3] == ["probe", "health", "handshake"]
    assert len(report["checks"]) == 18
    assert all(isinstance(check["latency_ms"], float) for check in report["checks"])


def test_check_prints_a_table_and_fails_with_the_wrong_key(scout_url: str) -> None:
    result = run("check", scout_url, "--role", "SCOUT", "--key", "wrong", "--allow", "127.0.0.0/8")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in lines if "│" in line]
    assert rows[0][:2] == ["probe", "pass"]
    dispatch = next(row for row in rows if row[0] == "dispatch:SCOUT")
    assert dispatch[1] == "FAIL"
    assert dispatch[3] == (
        'External agent responded with 401: {"error":"Invalid signature","code":"bad-signature"}'
    )
    # with the wrong key only the tampered and stale requests get the 4xx they expect
    assert "13/18 checks passed" in result.stdout
    assert "Traceback" not in result.stderr


def test_an_agent_built_without_the_sdk_passes_with_one_warning(plain_scout_url: str) -> None:
    args = ("check", plain_scout_url, "--role", "SCOUT", "--key", KEY, "--allow", "127.0.0.0/8")
    result = run(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in lines if "│" in line]
    assert [(row[0], row[1]) for row in rows if row[1] != "pass"] == [("stale-timestamp", "WARN")]
    assert "17/18 checks passed, 1 warning" in result.stdout

    strict = run(*args, "--strict", "--json")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    report = orjson.loads(strict.stdout)
    assert (report["passed"], report["warnings"]) == (False, [])
    stale = next(check for check in report["checks"] if check["name"] == "stale-timestamp")
    assert (stale["passed"], stale["advisory"]) == (False, False)


def test_the_key_can_come_from_the_environment(scout_url: str) -> None:
    result = run(
        "check",
        scout_url,
        "--role",
        "SCOUT",
        "--allow",
        "127.0.0.0/8",
        "--json",
        env={"PALAESTRA_AGENT_KEY": KEY},
    )
    assert result.returncode == 0, result.stdout


def test_check_without_allow_explains_the_refusal(scout_url: str) -> None:
    result = run("check", scout_url, "--role", "SCOUT", "--key", KEY, "--json")
    assert result.returncode == 1
    report = orjson.loads(result.stdout)
    assert report["checks"][0]["reason"].startswith("Endpoint refused by egress policy: ")
    assert "--allow 127.0.0.0/8" in result.stderr


def test_check_names_the_address_a_name_resolved_to() -> None:
    """The author's own machine and DNS: unlike the platform, the check names the address."""
    result = run("check", "https://localhost/agent", "--role", "SCOUT", "--key", KEY, "--json")
    assert result.returncode == 1
    report = orjson.loads(result.stdout)
    assert report["checks"][0]["reason"] in (
        "Endpoint refused by egress policy: 127.0.0.1 is a loopback address",
        "Endpoint refused by egress policy: ::1 is a loopback address",
    )


def test_check_needs_a_role_for_edgearena() -> None:
    result = run("check", "https://agent.example.com/")
    assert result.returncode == 2
    assert "--role is required" in result.stderr


def test_check_a_cage_fighter(fighter_url: str) -> None:
    result = run("check", fighter_url, "--arena", "cage", "--allow", "127.0.0.0/8")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4/4 checks passed" in result.stdout


def test_serve_reports_a_bad_target() -> None:
    result = run("agent", "serve", "examples.nothing_here:app")
    assert result.returncode == 2
    assert "cannot import examples.nothing_here" in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_cuts_a_request_that_never_arrives_in_full() -> None:
    """A client that sends half a request head is answered 408 and cut after
    ``--read-timeout``, while a whole request on another connection is answered."""
    port = free_port()
    command = [*PALAESTRA, "agent", "serve", "examples.scout:app", "--port", str(port)]
    for url in serve_command([*command, "--read-timeout", "1"], f"http://127.0.0.1:{port}/"):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as slow:
            slow.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the head never ends
            with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 (loopback)
                assert response.status == 200
            started = time.monotonic()
            answer = b""
            while chunk := slow.recv(4096):
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 408"), answer[:80]
            assert 0.5 < time.monotonic() - started < 5
