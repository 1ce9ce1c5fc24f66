"""``palaestra demo`` as a real process: start it, call its API, find its children, stop it."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from palaestra.demo import ADMIN_TOKEN, LINEUP

__all__ = ["ROOT", "RunningDemo", "descendants", "free_port", "palaestra_demo"]

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def _free_range(size: int) -> int:
    """The first of ``size`` consecutive free ports, below the range the kernel hands out
    to outgoing connections (so that none is taken between this check and the bind)."""
    top = min(_ephemeral_start(), 32_768) - size
    for _ in range(50):
        first = random.randrange(20_000, top)
        try:
            for port in range(first, first + size):
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        return first
    raise RuntimeError("no range of free ports")


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (read from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, parent = fields[0], int(fields[1])
        if state != "Z":
            children.setdefault(parent, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@dataclass
class RunningDemo:
    process: subprocess.Popen[bytes]
    base: str
    data_dir: Path
    output: Path

    def text(self) -> str:
        return self.output.read_text(errors="replace")

    def call(self, method: str, path: str, token: str = ADMIN_TOKEN, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(  # noqa: S310 - a loopback URL
            self.base + path,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"{method} {path}: {exc.code} {exc.read()[:300]!r}") from None

    def paths(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.base + "/openapi.json", timeout=10) as response:  # noqa: S310
            paths: dict[str, Any] = json.loads(response.read())["paths"]
            return paths

    def agents(self) -> dict[str, dict[str, Any]]:
        return {agent["name"]: agent for agent in self.call("GET", "/api/agents?arena=edgearena")}

    def wait_until(self, what: str, check: Callable[[], T | None], timeout_s: float = 60) -> T:
        deadline = time.monotonic() + timeout_s
        while True:
            assert self.process.poll() is None, f"the demo exited:\n{self.text()}"
            value = check()
            if value:
                return value
            assert time.monotonic() < deadline, f"timed out waiting until {what}:\n{self.text()}"
            time.sleep(0.2)

    def wait_ready(self, timeout_s: float = 120) -> None:
        self.wait_until("the demo is up", lambda: "Palaestra demo is up" in self.text(), timeout_s)

    def stop(self, timeout_s: float = 30) -> int:
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=timeout_s)


@contextmanager
def palaestra_demo(data_dir: Path, *, health_scale: float = 0.005) -> Iterator[RunningDemo]:
    port, agent_port = free_port(), _free_range(len(LINEUP))
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PALAESTRA_HOUSE_", "PALAESTRA_AGENT_"))
    }
    output = data_dir.parent / f"{data_dir.name}.out"
    with output.open("wb") as sink:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "palaestra",
                "demo",
                "--port",
                str(port),
                "--agent-port",
                str(agent_port),
                "--data-dir",
                str(data_dir),
                "--health-scale",
                str(health_scale),
            ],
            cwd=ROOT,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    demo = RunningDemo(process, f"http://127.0.0.1:{port}", data_dir, output)
    try:
        yield demo
    finally:
        if process.poll() is None:
            leftovers = descendants(process.pid)
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
            for pid in leftovers:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
