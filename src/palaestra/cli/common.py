"""What several commands share: the ``--allow`` option, failing with a message, the
settings, and work done on an open platform."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, NoReturn, TypeVar

import typer

from palaestra.errors import PalaestraError
from palaestra.platform import Platform
from palaestra.settings import Settings

__all__ = ["EgressAllow", "fail", "load_settings", "on_platform"]

Done = TypeVar("Done")

#: The egress ranges a command allows besides the configured ones.
EgressAllow = Annotated[
    list[str] | None,
    typer.Option("--allow", help="Egress range to allow (CIDR), e.g. 127.0.0.0/8; repeatable."),
]


def fail(message: str, code: int = 2) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def load_settings(**overrides: object) -> Settings:
    """The settings, with the overrides given (None: not given); invalid ones fail with why."""
    given: dict[str, Any] = {name: value for name, value in overrides.items() if value is not None}
    try:
        return Settings(**given)
    except Exception as exc:  # pydantic's ValidationError, shown without a traceback
        fail(f"invalid configuration: {exc}")


def on_platform(
    settings: Settings, work: Callable[[Platform], Awaitable[Done]], *, exit_code: int = 2
) -> Done:
    """What ``work`` gives on the platform, opened and closed around it; an arena error
    fails with ``exit_code``."""

    async def run() -> Done:
        platform = await Platform.open(settings)
        try:
            return await work(platform)
        finally:
            await platform.close()

    try:
        return asyncio.run(run())
    except PalaestraError as exc:
        fail(str(exc), exit_code)
