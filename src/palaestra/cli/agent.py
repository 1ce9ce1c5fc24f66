"""Commands for agent authors: ``palaestra check URL`` and ``palaestra agent serve``."""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from palaestra.checks import (
    Arena,
    CheckResult,
    CheckVerdict,
    admitted,
    binding,
    run_checks,
    warnings,
)
from palaestra.cli.app import app
from palaestra.cli.common import EgressAllow, fail
from palaestra.clock import SystemClock
from palaestra.egress import EgressClient, EgressPolicy
from palaestra.errors import EgressRefused
from palaestra.protocol import Role

__all__ = ["check", "load_app", "serve"]

agent_app = typer.Typer(
    name="agent", help="Run an agent built with palaestra.harness.", no_args_is_help=True
)
app.add_typer(agent_app, name="agent")


@app.command()
def check(
    url: Annotated[str, typer.Argument(help="The agent's endpoint URL, as it would register.")],
    arena: Annotated[
        Arena, typer.Option(help="The protocol the endpoint speaks.")
    ] = Arena.EDGEARENA,
    role: Annotated[
        Role | None,
        typer.Option(case_sensitive=False, help="The edgearena role: SCOUT, BUILDER or ANALYST."),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option(
            envvar="PALAESTRA_AGENT_KEY",
            show_default=False,
            help="The agent's key, to send correctly signed requests (without it the signed "
            "checks fail as not run).",
        ),
    ] = None,
    allow: EgressAllow = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Also fail on the advisory checks (forged signature, stale timestamp, "
            "repeated id), which test what the protocol only recommends.",
        ),
    ] = False,
) -> None:
    """Run every check the platform runs on an agent; exit 0 unless one fails.

    An advisory check that does not pass is a warning (WARN) and does not change
    the exit status, unless --strict makes it binding.
    """
    try:
        policy = EgressPolicy.allowing(allow or [])
    except EgressRefused as exc:
        fail(str(exc))
    if arena is Arena.EDGEARENA and role is None:
        fail("--role is required with --arena edgearena (SCOUT, BUILDER or ANALYST)")
    results = asyncio.run(_run(url, arena, role, key, policy))
    if strict:
        results = binding(results)
    if json_output:
        sys.stdout.buffer.write(orjson.dumps(_report(url, arena, role, results)) + b"\n")
    else:
        _print_table(url, arena, role, results)
    first = (results[0].reason or "") if results else ""
    if not allow and "refused by egress policy" in first and "invalid URL" not in first:
        typer.echo("hint: for an agent on this machine, add --allow 127.0.0.0/8", err=True)
    raise typer.Exit(0 if admitted(results) else 1)


async def _run(
    url: str, arena: Arena, role: Role | None, key: str | None, policy: EgressPolicy
) -> list[CheckResult]:
    console = Console(stderr=True)
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        waiting = progress.add_task("starting", total=None)

        def tell(name: str, deadline_s: float) -> None:
            progress.reset(waiting, description=f"waiting on {name} (up to {deadline_s:g}s)")

        # The author's own machine and DNS: a refusal names the address it resolved to.
        async with EgressClient(policy, reveal_addresses=True) as client:
            return await run_checks(
                client, url, arena, clock=SystemClock(), role=role, key=key, progress=tell
            )


def _report(
    url: str, arena: Arena, role: Role | None, results: list[CheckResult]
) -> dict[str, Any]:
    return {
        "url": url,
        "arena": str(arena),
        "role": None if role is None else str(role),
        "passed": admitted(results),
        "warnings": warnings(results),
        "checks": [result.as_dict() for result in results],
    }


def _print_table(url: str, arena: Arena, role: Role | None, results: list[CheckResult]) -> None:
    console = Console()
    subject = f"{arena} {role}" if role is not None else str(arena)
    table = Table(title=f"palaestra check {url} ({subject})", title_justify="left")
    table.add_column("check", no_wrap=True)
    table.add_column("result", no_wrap=True)
    table.add_column("latency", justify="right", no_wrap=True)
    table.add_column("reason", overflow="fold")
    for result in results:
        verdict = _VERDICTS[result.verdict]
        latency = "-" if result.latency_ms is None else f"{result.latency_ms:.0f} ms"
        reason = Text(result.reason or "", style="dim" if result.passed else "")
        table.add_row(result.name, verdict, latency, reason)
    console.print(table)
    passed = sum(result.passed for result in results)
    summary = f"{passed}/{len(results)} checks passed"
    warned = len(warnings(results))
    if warned:
        summary += f", {warned} warning{'s' if warned > 1 else ''} (advisory: --strict fails them)"
    console.print(summary, markup=False, highlight=False)


_VERDICTS = {
    CheckVerdict.PASS: Text("pass", style="green"),
    CheckVerdict.WARN: Text("WARN", style="bold yellow"),
    CheckVerdict.FAIL: Text("FAIL", style="bold red"),
}


@agent_app.command()
def serve(
    target: Annotated[
        str,
        typer.Argument(help="module:attribute, an Agent or an ASGI app (e.g. examples.scout:app)."),
    ],
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    key: Annotated[
        str | None,
        typer.Option(
            show_default=False,
            help="The agent's key (sets PALAESTRA_AGENT_KEY for the agent; prefer the variable).",
        ),
    ] = None,
    public_url: Annotated[
        str | None,
        typer.Option(
            show_default=False,
            help="The URL the agent is registered under, behind a proxy "
            "(sets PALAESTRA_AGENT_PUBLIC_URL).",
        ),
    ] = None,
    log_level: Annotated[str, typer.Option(help="uvicorn's log level.")] = "info",
    read_timeout: Annotated[
        float,
        typer.Option(
            min=0.1,
            help="Seconds a request has to arrive in full; a slower client is answered 408 "
            "and cut, so half-sent requests cannot hold the agent's connections.",
        ),
    ] = 30.0,
    max_connections: Annotated[
        int,
        typer.Option(min=1, help="Connections kept open at once; past it, 503 and closed."),
    ] = 1024,
) -> None:
    """Serve an agent with uvicorn, with the platform server's bounds on slow clients."""
    import uvicorn

    from palaestra.http.server import KEEP_ALIVE_S, bounded_protocol

    # The agent reads its settings when its module is imported, so set them first.
    if key is not None:
        os.environ["PALAESTRA_AGENT_KEY"] = key
    if public_url is not None:
        os.environ["PALAESTRA_AGENT_PUBLIC_URL"] = public_url
    asgi = load_app(target)
    uvicorn.run(
        asgi,
        host=host,
        port=port,
        log_level=log_level,
        http=bounded_protocol(read_timeout, max_connections),
        ws="none",
        lifespan="on",
        timeout_keep_alive=KEEP_ALIVE_S,
    )


def load_app(target: str) -> Any:
    """Import ``module:attribute`` (from the current folder too); an Agent becomes its app."""
    from palaestra.harness import Agent

    module_name, _, attribute = target.partition(":")
    if not module_name:
        fail(f"expected module:attribute, got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        fail(f"cannot import {module_name}: {exc}")
    value = getattr(module, attribute or "app", None)
    if value is None:
        fail(f"{module_name} has no attribute {attribute or 'app'!r}")
    if isinstance(value, Agent):
        return value.app()
    if not callable(value):
        fail(f"{target} is not an ASGI application")
    return value
