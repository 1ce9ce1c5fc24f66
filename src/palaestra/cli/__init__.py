"""The ``palaestra`` command line. Commands are thin: they parse, call the library, print."""

from __future__ import annotations

from palaestra.cli.app import app
from palaestra.cli.commands import main

__all__ = ["app", "main"]
