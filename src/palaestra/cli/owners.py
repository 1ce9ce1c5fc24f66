"""``palaestra owner rotate-token`` and ``revoke-token``: the admin's hand on owners' tokens.

The commands act as the admin on the configured database, through the same services as
the API. A server running on that database is another process: it stops accepting the
old token within ``PALAESTRA_OWNER_TOKEN_CACHE_S``.
"""

from __future__ import annotations

from typing import Annotated, TypeVar

import typer

from palaestra.cli.app import app
from palaestra.cli.common import load_settings, on_platform
from palaestra.engine.accounts import (
    Caller,
    IssuedToken,
    RevokedToken,
    revoke_owner_token,
    rotate_owner_token,
)
from palaestra.logs import configure_logging
from palaestra.settings import Settings

__all__ = ["revoke_token", "rotate_token"]

owner_app = typer.Typer(
    name="owner", help="Rotate or revoke an owner's token (as the admin).", no_args_is_help=True
)
app.add_typer(owner_app, name="owner")

_ADMIN = Caller(owner_id=None, is_admin=True)
Done = TypeVar("Done")
OwnerId = Annotated[str, typer.Argument(help="The owner's id (from POST /api/owners).")]


@owner_app.command("rotate-token")
def rotate_token(owner_id: OwnerId) -> None:
    """Issue the owner a new token and print it (shown once); the old one stops working."""
    settings = _settings()
    issued: IssuedToken = on_platform(
        settings, lambda platform: rotate_owner_token(platform, _ADMIN, owner_id), exit_code=1
    )
    typer.echo(f"New token for owner {issued.owner_id} (shown once, keep it safe):", err=True)
    typer.echo(issued.token)
    typer.echo(_within(settings), err=True)


@owner_app.command("revoke-token")
def revoke_token(owner_id: OwnerId) -> None:
    """Revoke the owner's token: nothing opens the owner until its token is rotated."""
    settings = _settings()
    revoked: RevokedToken = on_platform(
        settings, lambda platform: revoke_owner_token(platform, _ADMIN, owner_id), exit_code=1
    )
    typer.echo(f"Token of owner {revoked.owner_id} revoked.")
    typer.echo(_within(settings), err=True)


def _within(settings: Settings) -> str:
    seconds = settings.owner_token_cache_s
    return (
        f"A server running on this database stops accepting the old token within {seconds:g} s "
        "(PALAESTRA_OWNER_TOKEN_CACHE_S)."
    )


def _settings() -> Settings:
    settings = load_settings()
    # Standard output carries the new token alone; the log goes to standard error.
    configure_logging(settings.log_level, json=settings.log_json, stderr=True)
    return settings
