"""How ``palaestra serve`` sets up the interpreter once it has started.

- What the process built while starting lives as long as the process: it
  leaves the cyclic collector's sight (``gc.freeze``), whose full passes
  would otherwise walk it again and again under dispatch load.
- A thread waiting for the GIL waits a whole switch interval (CPython's
  default is 5 ms) before it asks the running thread to let go. The store's
  writer thread retakes the GIL after every call into SQLite while the event
  loop runs Python almost all the time, so under dispatch load the writer's
  transactions, and the senders waiting for slots to be opened, were mostly
  waiting; at ``SWITCH_INTERVAL_S`` those transactions take a fifth to a third
  less time (``bench/dispatch.py``).
"""

from __future__ import annotations

import gc
import sys
from typing import Final

__all__ = ["SWITCH_INTERVAL_S", "settle"]

#: How long a thread waits for the GIL before it asks for it.
SWITCH_INTERVAL_S: Final = 0.0005


def settle() -> None:
    """Call once the process is set up: what exists now lives as long as the process."""
    gc.collect()
    gc.freeze()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
