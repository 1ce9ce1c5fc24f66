"""Deadlines for many concurrent calls, sharing timers.

``asyncio.timeout`` gives every call its own timer handle in the event loop's
heap, rescheduled and cancelled per call; with thousands of dispatches in
flight that bookkeeping costs about as much as signing the request. Here calls
whose deadlines fall in the same short slot (:data:`SLOT_S`) share one timer,
and entering or leaving a deadline is a set insertion and removal.

A deadline fires at most one slot late. The semantics are those of
``asyncio.timeout``: when it fires, the task is cancelled, and the
``CancelledError`` that reaches the end of the block becomes ``TimeoutError``,
unless someone else also cancelled the task, in which case the cancellation
goes on. Two differences follow from sharing: of two nested deadlines less
than a slot apart, either may be the one that fires (the egress client never
nests them), and a deadline object is entered once only.
"""

from __future__ import annotations

import asyncio
import math
from types import TracebackType
from typing import Final

__all__ = ["SLOT_S", "Deadline", "DeadlineTimers"]

#: Deadlines are grouped into slots this long: one timer per slot.
SLOT_S: Final = 0.05


class DeadlineTimers:
    """The shared timers of one event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._slots: dict[int, set[Deadline]] = {}

    def after(self, seconds: float) -> Deadline:
        """A deadline ``seconds`` from now, for use as ``with`` inside a task (entering and
        leaving it awaits nothing, so it is a plain context manager)."""
        return Deadline(self, self.loop.time() + seconds)

    def _add(self, deadline: Deadline) -> None:
        slot = math.ceil(deadline.when / SLOT_S)
        members = self._slots.get(slot)
        if members is None:
            members = self._slots[slot] = set()
            self.loop.call_at(slot * SLOT_S, self._fire, slot)
        members.add(deadline)
        deadline.slot = slot

    def _remove(self, deadline: Deadline) -> None:
        members = self._slots.get(deadline.slot)
        if members is not None:
            members.discard(deadline)

    def _fire(self, slot: int) -> None:
        for deadline in self._slots.pop(slot, ()):
            deadline.expire()

    def pending(self) -> int:
        """Deadlines currently armed (what the tests check)."""
        return sum(len(members) for members in self._slots.values())


class Deadline:
    """One call's deadline; see the module docstring."""

    __slots__ = ("_cancelling", "_deadlines", "_entered", "_task", "expired", "slot", "when")

    def __init__(self, deadlines: DeadlineTimers, when: float) -> None:
        self._deadlines = deadlines
        self.when = when
        self.slot = 0
        self.expired = False
        self._task: asyncio.Task[object] | None = None
        self._cancelling = 0
        self._entered = False

    def __enter__(self) -> Deadline:
        if self._entered:
            raise RuntimeError("a Deadline is entered once only")
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a Deadline must be used inside a task")
        self._entered = True
        self._task = task
        self._cancelling = task.cancelling()
        if self.when <= self._deadlines.loop.time():
            # As asyncio.timeout does: from the loop, so a block that ends without
            # awaiting anything is not left with a cancellation pending after it.
            self._deadlines.loop.call_soon(self.expire)
        else:
            self._deadlines._add(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if not self.expired:
            self._deadlines._remove(self)
            self._task = None  # a late expire() now does nothing
            return
        assert self._task is not None
        # Ours was one cancellation; only if no other is pending does it end as a timeout.
        if self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
            raise TimeoutError from exc

    def expire(self) -> None:
        if self.expired or self._task is None or self._task.done():
            return
        self.expired = True
        self._task.cancel()
