"""The whole command line: importing each command module registers its commands on the app."""

from __future__ import annotations

from palaestra.cli import (  # noqa: F401
    agent,
    debug,
    demo,
    history,
    matches,
    model,
    owners,
    ratings,
    rejudge,
    runs,
    server,
)
from palaestra.cli.app import app

__all__ = ["main"]


def main() -> None:
    app()
