"""``palaestra demo``: a populated arena on this machine in one command."""

from palaestra.demo.api import ADMIN_TOKEN
from palaestra.demo.lineup import LINEUP, Entry
from palaestra.demo.run import Demo, DemoOptions, run_demo

__all__ = ["ADMIN_TOKEN", "LINEUP", "Demo", "DemoOptions", "Entry", "run_demo"]
