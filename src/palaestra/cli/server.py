"""Running the platform: ``serve``, ``migrate`` and ``config``."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from palaestra.cli.app import app
from palaestra.errors import PalaestraError
from palaestra.logs import configure_logging
from palaestra.settings import Settings

__all__ = ["config", "migrate", "serve"]


def _settings(**overrides: object) -> Settings:
    try:
        given: dict[str, Any] = {k: v for k, v in overrides.items() if v is not None}
        return Settings(**given)
    except Exception as exc:  # pydantic's ValidationError, shown without a traceback
        typer.echo(f"error: invalid configuration: {exc}", err=True)
        raise typer.Exit(2) from None


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Address to listen on.")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on.")] = None,
    allow: Annotated[
        list[str] | None,
        typer.Option("--allow", help="Egress range to allow (CIDR), e.g. 127.0.0.0/8."),
    ] = None,
    data_dir: Annotated[str | None, typer.Option(help="Data folder (SQLite, secret key).")] = None,
    no_monitor: Annotated[
        bool, typer.Option("--no-monitor", help="Do not run the health monitor here.")
    ] = False,
) -> None:
    """Start the API and the health monitor in one process (the embedded default)."""
    import uvicorn

    from palaestra.api.app import create_app

    overrides: dict[str, object] = {"host": host, "port": port, "data_dir": data_dir}
    if allow:
        overrides["egress_allow"] = allow
    if no_monitor:
        overrides["monitor_enabled"] = False
    settings = _settings(**overrides)
    try:
        settings.egress_policy  # noqa: B018  (validates the allow-list before starting)
    except PalaestraError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    configure_logging(settings.log_level, json=settings.log_json)
    typer.echo(f"Palaestra listening on http://{settings.host}:{settings.port}", err=True)
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level="warning",
        timeout_graceful_shutdown=10,
    )


@app.command()
def migrate() -> None:
    """Bring the database schema to the newest revision."""
    from palaestra.store.db import Database

    settings = _settings()

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
    for name, value, description in _settings().described():
        table.add_row(name, value, description)
    Console().print(table)
