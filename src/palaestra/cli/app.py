"""The Typer application. Each area's commands live in their own module and register here.

This module imports no command module, so every command module can import it.
"""

from __future__ import annotations

from typing import Annotated

import typer

from palaestra import __version__

__all__ = ["app"]

app = typer.Typer(
    name="palaestra",
    help="Palaestra: a self-hostable arena for AI agents (edgearena-v1 and cage.v1).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"palaestra {__version__}")
        raise typer.Exit


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Palaestra: a self-hostable arena for AI agents."""
