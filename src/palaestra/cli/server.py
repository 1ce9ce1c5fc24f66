"""Running the platform: ``serve``, ``migrate`` and ``config``."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from palaestra import runtime
from palaestra.cli.app import app
from palaestra.cli.common import EgressAllow, fail, load_settings
from palaestra.cli.settings_rows import described
from palaestra.errors import PalaestraError
from palaestra.logs import configure_logging
from palaestra.settings import Settings

__all__ = ["config", "migrate", "serve", "worker"]


def _event_loop_run(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on uvloop when it is installed, as ``serve`` runs (uvicorn picks it)."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


def _check_egress(settings: Settings) -> None:
    """Fail before anything starts if the egress allow-list is not valid."""
    try:
        settings.egress_policy  # noqa: B018  (validates the allow-list)
    except PalaestraError as exc:
        fail(str(exc))


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Address to listen on.")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on.")] = None,
    allow: EgressAllow = None,
    data_dir: Annotated[str | None, typer.Option(help="Data folder (SQLite, secret key).")] = None,
    no_monitor: Annotated[
        bool, typer.Option("--no-monitor", help="Do not run the health monitor here.")
    ] = False,
    no_workers: Annotated[
        bool,
        typer.Option(
            "--no-workers",
            help="Serve the API only: jobs go to the broker for `palaestra worker` processes.",
        ),
    ] = False,
) -> None:
    """Start the API and the arena's work in one process (the embedded default).

    With PALAESTRA_BROKER_URL set, the work runs as jobs through the broker:
    inside this process too, unless --no-workers is given.
    """
    import uvicorn

    from palaestra.app import create_app
    from palaestra.http.server import server_config

    runtime.limit_malloc_arenas()

    settings = load_settings(
        host=host,
        port=port,
        data_dir=data_dir,
        egress_allow=allow or None,
        monitor_enabled=False if no_monitor else None,
        serve_jobs=False if no_workers else None,
    )
    if no_workers and not settings.broker_url:
        fail("--no-workers needs a broker: set PALAESTRA_BROKER_URL")
    _check_egress(settings)
    configure_logging(settings.log_level, json=settings.log_json)
    for warning in settings.startup_warnings():
        typer.echo(f"warning: {warning}", err=True)
    typer.echo(f"Palaestra listening on http://{settings.host}:{settings.port}", err=True)
    # With read timeouts and a connection cap (see http.server).
    uvicorn.Server(server_config(create_app(settings), settings)).run()


@app.command()
def worker(
    concurrency: Annotated[
        int | None,
        typer.Option(min=1, help="Jobs run at once (default PALAESTRA_WORKER_CONCURRENCY)."),
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(help="Serve this worker's Prometheus metrics on this port."),
    ] = None,
    allow: EgressAllow = None,
) -> None:
    """Run the arena's jobs from the broker (scale-out); many may run on many machines."""
    import signal

    from palaestra.jobs.worker import run_worker

    runtime.limit_malloc_arenas()

    settings = load_settings(worker_concurrency=concurrency, egress_allow=allow or None)
    if not settings.broker_url:
        fail(
            "PALAESTRA_BROKER_URL is not set: without a broker, `palaestra serve` "
            "runs the jobs itself"
        )
    _check_egress(settings)
    configure_logging(settings.log_level, json=settings.log_json)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await run_worker(
            settings,
            concurrency=settings.worker_concurrency,
            stop=stop,
            metrics_port=metrics_port,
            on_ready=ready,
        )

    def ready() -> None:
        runtime.settle()  # as `serve` does: what is built so far lives as long as the process
        typer.echo(f"Palaestra worker running {settings.worker_concurrency} jobs at once", err=True)

    _event_loop_run(main())
    typer.echo("Palaestra worker stopped cleanly", err=True)


@app.command()
def migrate() -> None:
    """Bring the database schema to the newest revision."""
    from palaestra.store.db import Database

    settings = load_settings()

    async def run() -> None:
        db = Database(settings.effective_database_url)
        try:
            await db.migrate()
        finally:
            await db.dispose()

    asyncio.run(run())
    typer.echo("database is up to date")


@app.command()
def config() -> None:
    """Print the effective configuration (secrets masked) and where each setting comes from."""
    table = Table(title="Palaestra configuration", show_lines=False)
    table.add_column("variable", style="bold")
    table.add_column("value")
    table.add_column("description", overflow="fold")
    for name, value, description in described(load_settings()):
        table.add_row(name, value, description)
    Console().print(table)
