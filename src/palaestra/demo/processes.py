"""Child processes of the demo: started in their own session, logged to files, stopped for sure.

Each child gets its own session, so a Ctrl-C in the terminal reaches only
the demo, which then stops every child in order. On Linux a child is also
told to stop if the demo itself dies without cleaning up.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp

__all__ = [
    "Child",
    "ChildFailed",
    "base_environment",
    "port_free",
    "python_command",
    "start_child",
]

_PR_SET_PDEATHSIG = 1


class ChildFailed(Exception):
    """A child process did not come up."""


def _die_with_parent() -> Callable[[], None] | None:
    if not sys.platform.startswith("linux"):
        return None

    def set_parent_death_signal() -> None:  # runs in the child, between fork and exec
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)

    return set_parent_death_signal


@dataclass
class Child:
    name: str
    process: asyncio.subprocess.Process
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def running(self) -> bool:
        return self.process.returncode is None

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    async def wait_http(self, url: str, timeout_s: float = 60.0) -> None:
        """Wait until ``url`` answers at all (any status); fail early if the child exits."""
        deadline = time.monotonic() + timeout_s
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
            while True:
                if not self.running:
                    raise ChildFailed(
                        f"{self.name} exited with status {self.process.returncode}:\n{self.tail()}"
                    )
                try:
                    async with session.get(url) as response:
                        await response.read()
                        return
                except (aiohttp.ClientError, TimeoutError):
                    pass
                if time.monotonic() > deadline:
                    raise ChildFailed(f"{self.name} did not answer {url} in {timeout_s:.0f}s")
                await asyncio.sleep(0.1)

    async def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``grace_s``; returns once the process is gone."""
        if self.running:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), grace_s)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self.process.kill()
        await self.process.wait()


async def start_child(
    name: str,
    command: Sequence[str],
    *,
    log: Path,
    env: Mapping[str, str],
    cwd: Path,
) -> Child:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as handle:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=handle,
            stderr=asyncio.subprocess.STDOUT,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
            preexec_fn=_die_with_parent(),  # only prctl: safe between fork and exec
        )
    return Child(name, process, log)


def port_free(port: int) -> bool:
    """Whether a server could listen on 127.0.0.1:``port`` now."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def python_command(*args: str) -> list[str]:
    """``palaestra ...`` run by this interpreter (no reliance on PATH)."""
    return [sys.executable, "-m", "palaestra", *args]


def base_environment() -> dict[str, str]:
    """This process's environment without the settings the demo decides itself."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PALAESTRA_AGENT_", "UVICORN_"))
    }
