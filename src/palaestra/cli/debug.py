"""Debugging commands for operators and agent authors: ``sign`` and ``url-check``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import typer

from palaestra.cli.app import app
from palaestra.cli.common import EgressAllow, fail
from palaestra.clock import Clock, FrozenClock, SystemClock
from palaestra.egress.policy import EgressPolicy
from palaestra.egress.resolve import resolve_checked
from palaestra.errors import EgressRefused, PalaestraError
from palaestra.protocol.signing import SIGNATURE_HEADER, hmac_signer

__all__ = ["sign", "url_check"]


@app.command()
def sign(
    key: Annotated[str, typer.Option(help="The agent's API key.")],
    url: Annotated[str, typer.Option(help="The URL the request is sent to.")],
    timestamp: Annotated[
        int | None, typer.Option(help="Unix seconds to sign at (default: now).")
    ] = None,
    body_file: Annotated[
        str | None,
        typer.Option("--body-file", help="File with the raw body; '-' reads standard input."),
    ] = None,
    task_id: Annotated[
        str | None, typer.Option("--task-id", help="Task id for the x-edgearena-task-id header.")
    ] = None,
    headers: Annotated[
        bool, typer.Option("--headers", help="Print all the signature headers, one per line.")
    ] = False,
) -> None:
    """Print the x-edgearena-signature value of a request (an empty body by default)."""
    body = _read_body(body_file)
    clock: Clock = SystemClock() if timestamp is None else FrozenClock(timestamp)
    try:
        signed = hmac_signer(key, clock, task_id)(url, body)
    except PalaestraError as exc:
        fail(str(exc))
    if not headers:
        typer.echo(signed[SIGNATURE_HEADER])
        return
    for name, value in signed.items():
        typer.echo(f"{name}: {value}")


@app.command("url-check")
def url_check(
    url: Annotated[str, typer.Argument(help="The endpoint URL to judge.")],
    allow: EgressAllow = None,
) -> None:
    """Resolve URL and apply the egress policy, sending nothing."""
    try:
        policy = EgressPolicy.allowing(allow or [])
        addresses = asyncio.run(resolve_checked(policy, url))
    except EgressRefused as exc:
        typer.echo(f"refused: {exc.exact_message}")
        raise typer.Exit(1) from None
    typer.echo(f"allowed {' '.join(str(a) for a in addresses)}")


def _read_body(body_file: str | None) -> bytes:
    if body_file is None:
        return b""
    if body_file == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(body_file).read_bytes()
    except OSError as exc:
        fail(f"cannot read {body_file}: {exc.strerror}")
