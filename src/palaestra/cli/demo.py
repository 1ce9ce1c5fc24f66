"""``palaestra demo``: the arena, populated, on this machine."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from palaestra.cli.app import app

__all__ = ["demo"]


@app.command()
def demo(
    port: Annotated[int, typer.Option(help="Port of the platform.")] = 8000,
    data_dir: Annotated[
        Path,
        typer.Option(help="Demo folder (database, secret key, logs); emptied at each start."),
    ] = Path("./demo-data"),
    agent_port: Annotated[
        int, typer.Option(help="First port of the example agents (one port each).")
    ] = 9100,
    health_scale: Annotated[
        float,
        typer.Option(
            min=0.001,
            max=1.0,
            help="Multiplies the health ping cadence (1 = every 5 min while ACTIVE).",
        ),
    ] = 0.02,
) -> None:
    """Start the platform and the example agents, register them, run a run and matches.

    Run it from the repository's root (it serves the agents in examples/).
    Ctrl-C stops it and every process it started.
    """
    from palaestra.demo import DemoOptions, run_demo

    def say(line: str) -> None:
        typer.echo(line)

    options = DemoOptions(
        port=port, data_dir=data_dir, agent_port=agent_port, health_scale=health_scale
    )
    raise typer.Exit(asyncio.run(run_demo(options, say)))
