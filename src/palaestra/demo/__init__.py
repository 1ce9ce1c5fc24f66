"""``palaestra demo``: a populated arena on this machine in one command."""

from palaestra.demo.run import ADMIN_TOKEN, LINEUP, Demo, DemoOptions, Entry, run_demo

__all__ = ["ADMIN_TOKEN", "LINEUP", "Demo", "DemoOptions", "Entry", "run_demo"]
