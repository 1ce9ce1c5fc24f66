"""The whole command line: importing each command module registers its commands on the app."""

from __future__ import annotations

from palaestra.cli import agent, debug, demo, matches, ratings, rejudge, runs, server  # noqa: F401
from palaestra.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    app()
