"""The ASGI application: the API, the web pages, JSON errors, the body cap, and the services
of its mode (:mod:`palaestra.services`) while it serves."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import structlog
from fastapi import Depends, FastAPI

from palaestra import __version__, runtime, web
from palaestra.api import (
    routes_agents,
    routes_completion,
    routes_fighters,
    routes_matches,
    routes_owners,
    routes_runs,
    routes_system,
)
from palaestra.api.contract import declare_errors
from palaestra.api.errors import install_error_handlers
from palaestra.api.limits import BodyLimit, InTurn
from palaestra.api.operations import describe_operations, operation_id
from palaestra.api.routes_leaderboard import router as leaderboard_router
from palaestra.engine.accounts import bootstrap_admin
from palaestra.http.headers import SecurityHeaders
from palaestra.logs import configure_logging
from palaestra.platform import Platform
from palaestra.services import open_services
from palaestra.settings import Settings

__all__ = ["create_app"]

log = structlog.get_logger(__name__)


def create_app(
    settings: Settings | None = None,
    *,
    platform: Platform | None = None,
    on_admin_token: Callable[[str], None] | None = None,
) -> FastAPI:
    """The ASGI app. With ``platform`` given (tests), it is used and left open at shutdown."""
    settings = settings or (platform.settings if platform else Settings())
    if not structlog.is_configured():
        configure_logging(settings.log_level, json=settings.log_json)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = platform is None
        current = platform or await Platform.open(settings)
        if owned:
            runtime.settle()  # everything built so far lives as long as the process
        for warning in settings.startup_warnings():
            log.warning("weak configuration", warning=warning)
        token = await bootstrap_admin(current)
        if token is not None:
            (on_admin_token or _print_admin_token)(token)
        async with open_services(current) as services:
            app.state.services = services
            yield
        if owned:
            await current.close()
            print("Palaestra stopped cleanly", file=sys.stderr, flush=True)

    app = FastAPI(
        title="Palaestra",
        version=__version__,
        description="A self-hostable arena for AI agents: edgearena-v1 and cage.v1.",
        lifespan=lifespan,
        # Served by web.mount from the package's own files, not from a CDN.
        docs_url=None,
        redoc_url=None,
        generate_unique_id_function=operation_id,
    )
    install_error_handlers(app)
    app.add_middleware(
        BodyLimit, max_bytes=settings.max_body_bytes, routes=[routes_completion.BODY_CAP]
    )
    # The agents' completion callback first: the hottest path is matched before the rest.
    app.include_router(routes_completion.router)
    app.include_router(routes_system.router)
    app.include_router(routes_agents.router)
    app.include_router(routes_owners.router)
    app.include_router(routes_fighters.router)
    app.include_router(leaderboard_router)
    # In turns, taken after authentication and the body's arrival (see limits.InTurn).
    app.state.run_turns = InTurn(settings.runs_api_concurrency)
    app.include_router(
        routes_runs.router, dependencies=[Depends(app.state.run_turns, scope="function")]
    )
    app.include_router(routes_matches.router)
    describe_operations(app)
    declare_errors(app)
    web.mount(app, settings.guide_dir)
    # Outermost, so the body cap's 413 gets the headers too.
    app.state.https = settings.public_url.startswith("https://")
    app.add_middleware(SecurityHeaders, https=app.state.https)
    return app


def _print_admin_token(token: str) -> None:
    print(f"\nPalaestra admin token (shown once, keep it safe):\n  {token}\n", flush=True)
