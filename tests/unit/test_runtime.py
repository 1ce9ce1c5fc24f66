"""``runtime``: the heap out of the collector's sight, a sooner GIL hand-over, one arena."""

from __future__ import annotations

import gc
import platform
import sys
from collections.abc import Iterator

import pytest

from palaestra import runtime


@pytest.fixture
def restored() -> Iterator[None]:
    interval = sys.getswitchinterval()
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    sys.setswitchinterval(interval)


def test_settle_freezes_the_heap_and_shortens_the_switch_interval(restored: None) -> None:
    survivor = [object() for _ in range(10)]  # a container that outlives set-up
    runtime.settle()
    assert gc.get_freeze_count() > len(survivor)
    assert not any(survivor is obj for obj in gc.get_objects())  # out of the collector's sight
    assert sys.getswitchinterval() == pytest.approx(runtime.SWITCH_INTERVAL_S)
    assert gc.get_threshold() == runtime.GC_THRESHOLDS


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc arenas only")
def test_malloc_arenas_are_limited_on_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert runtime.limit_malloc_arenas() is True


def test_an_arena_limit_in_the_environment_is_left_to_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert runtime.limit_malloc_arenas() is False
