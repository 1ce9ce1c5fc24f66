"""How ``palaestra serve`` sets up the interpreter once it has started.

- What the process built while starting lives as long as the process: it
  leaves the cyclic collector's sight (``gc.freeze``), whose full passes
  would otherwise walk it again and again under dispatch load.
- The cyclic collector runs less often (``GC_THRESHOLDS``): nearly every
  object a task makes is freed by its reference count, yet at CPython's
  defaults (700, 10, 10) the collector walked the young objects after every
  700 allocations, and all of them every few seconds. In ``bench/runs.py
  --rss-runs 1000`` (SQLite, 2026-12-03) its passes took 10.7 s of
  ``serve``'s 57 s of CPU; at ``GC_THRESHOLDS`` 5.2 s of 51 s, for a little
  more memory (63 to 72 KB a run in flight at 1,000 runs; 20,000 young
  objects took 87 KB).
- A thread waiting for the GIL waits a whole switch interval (CPython's
  default is 5 ms) before it asks the running thread to let go. The store's
  writer thread retakes the GIL after every call into SQLite while the event
  loop runs Python almost all the time, so under dispatch load the writer's
  transactions, and the senders waiting for slots to be opened, were mostly
  waiting; at ``SWITCH_INTERVAL_S`` those transactions take a fifth to a third
  less time (``bench/dispatch.py``).
- glibc's malloc gives every thread that allocates an arena of its own (up to
  eight per core), and memory freed into one arena serves only that arena
  again. The store's threads (the SQLite writer and readers) allocate in
  bursts under load, so each kept its own high-water mark: with one arena for
  the process, what one thread frees another reuses, and the memory a
  process grows by at 1,000 runs in flight fell by about a third
  (``bench/runs.py --rss-runs 1000``: 89 to 62 KB a run on SQLite).
  ``MALLOC_ARENA_MAX`` in the environment, as glibc reads it, is left to rule.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
from typing import Final

__all__ = ["GC_THRESHOLDS", "MALLOC_ARENAS", "SWITCH_INTERVAL_S", "limit_malloc_arenas", "settle"]

#: The cyclic collector's thresholds (``gc.set_threshold``): net allocations before a young
#: pass, young passes before a middle one, middle passes before a full one.
GC_THRESHOLDS: Final = (10_000, 10, 10)
#: How long a thread waits for the GIL before it asks for it.
SWITCH_INTERVAL_S: Final = 0.0005
#: The malloc arenas of a process: one, shared by its threads.
MALLOC_ARENAS: Final = 1
_M_ARENA_MAX: Final = -8  # glibc's mallopt parameter


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Call first thing, before threads start: have glibc's malloc keep at most ``arenas``
    arenas. ``False`` where it does not apply (not glibc, or ``MALLOC_ARENA_MAX`` is set)."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_ARENA_MAX, arenas))


def settle() -> None:
    """Call once the process is set up: what exists now lives as long as the process."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    sys.setswitchinterval(SWITCH_INTERVAL_S)
