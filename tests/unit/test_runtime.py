"""``runtime.settle``: the heap leaves the collector's sight, the GIL changes hands sooner."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest

from palaestra import runtime


@pytest.fixture
def restored() -> Iterator[None]:
    interval = sys.getswitchinterval()
    yield
    gc.unfreeze()
    sys.setswitchinterval(interval)


def test_settle_freezes_the_heap_and_shortens_the_switch_interval(restored: None) -> None:
    survivor = [object() for _ in range(10)]  # a container that outlives set-up
    runtime.settle()
    assert gc.get_freeze_count() > len(survivor)
    assert not any(survivor is obj for obj in gc.get_objects())  # out of the collector's sight
    assert sys.getswitchinterval() == pytest.approx(runtime.SWITCH_INTERVAL_S)
