"""The local model's instances and queue, without loading a model: lanes, and a late answer."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from palaestra.protocol import FailureKind
from palaestra.providers import ProviderFailed
from palaestra.providers.local import Lane, LocalModel, shared_local_model
from tests.conftest import require

NOWHERE = Path("/nonexistent/model.gguf")  # never loaded: these answers never start


def test_each_lane_has_its_own_instance_shared_within_the_process() -> None:
    runs = shared_local_model(NOWHERE)
    assert shared_local_model(NOWHERE, Lane.RUNS) is runs
    cage = shared_local_model(NOWHERE, Lane.CAGE)
    assert cage is not runs
    assert shared_local_model(NOWHERE, Lane.CAGE) is cage


def test_an_answer_whose_deadline_passed_in_the_queue_never_starts_and_is_a_time_out() -> None:
    model = LocalModel(NOWHERE)
    with pytest.raises(ProviderFailed) as raised:
        asyncio.run(model.complete([{"role": "user", "content": "hi"}], deadline=0))
    assert raised.value.failure is not None
    assert raised.value.failure.kind is FailureKind.TIMEOUT
    assert "deadline passed" in raised.value.message


def test_a_file_that_is_no_model_fails_as_the_provider(tmp_path: Path) -> None:
    available = importlib.util.find_spec("llama_cpp") is not None
    require("llama-cpp-python (pip install '.[local]')", available, "it is not installed")
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    with pytest.raises(ProviderFailed) as raised:
        asyncio.run(LocalModel(empty).complete([{"role": "user", "content": "hi"}], deadline=60))
    assert raised.value.message.startswith(f"the local model {empty} could not be loaded")
