"""The ASGI application: the API, the web pages, JSON errors, the body cap, the embedded workers."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial

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
from palaestra.engine.agents.health import HealthMonitor
from palaestra.engine.cage.matchmaker import Matchmaker, through_referee
from palaestra.engine.cage.referee import Referee
from palaestra.engine.history import roll_up_history
from palaestra.engine.history.retention import build_retention
from palaestra.engine.loops import every
from palaestra.engine.ratings.leaderboard import RatingsWorker
from palaestra.engine.runs.driver import RunDriver
from palaestra.engine.runs.endpoint import BEAT_S, announce_up, beat
from palaestra.http.headers import SecurityHeaders
from palaestra.jobs.serving import through_broker
from palaestra.logs import configure_logging
from palaestra.platform import Platform
from palaestra.settings import Settings
from palaestra.throttle import Throttle

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
        app.state.platform = current
        if owned:
            runtime.settle()  # everything built so far lives as long as the process
        for warning in settings.startup_warnings():
            log.warning("weak configuration", warning=warning)
        token = await bootstrap_admin(current)
        if token is not None:
            (on_admin_token or _print_admin_token)(token)
        # Scale-out: the runs are stepped by workers, which must tell when this API (the
        # completion endpoint) is down; embedded, the stepper lives and dies with it.
        await announce_up(current, beating=bool(settings.broker_url))
        if settings.broker_url:  # scale-out: the work goes through the broker as jobs
            stop = asyncio.Event()
            beating = asyncio.create_task(
                every(BEAT_S, stop, partial(beat, current), "completion endpoint beat")
            )
            try:
                async with through_broker(app, current):  # sets app.state.runs
                    yield
            finally:
                stop.set()
                await beating
            await app.state.throttle.close()
            if owned:
                await current.close()
                print("Palaestra stopped cleanly", file=sys.stderr, flush=True)
            return
        # Runs: the desk that receives agents' async completions serves even with the
        # loop turned off.
        runs = RunDriver(current)
        app.state.runs = runs
        stop = asyncio.Event()
        runs_task = asyncio.create_task(runs.run(stop)) if settings.runs_enabled else None
        monitor_task = referee_task = None
        if settings.monitor_enabled:
            monitor_task = asyncio.create_task(HealthMonitor(current).run(stop))
        if settings.referee_enabled:
            referee = Referee(current, concurrency=settings.referee_concurrency)
            app.state.referee = referee
            referee_task = asyncio.create_task(referee.run(stop))
        ratings_task = None
        if settings.ratings_enabled:
            ratings_task = asyncio.create_task(RatingsWorker(current).run(stop))
        # Always: on PostgreSQL it also makes the coming days' event partitions.
        retention_task = asyncio.create_task(
            every(
                settings.retention_interval_s,
                stop,
                build_retention(current, stop).run_once,
                "history retention",
            )
        )
        # History's roll-ups: one process, so no lock to take (SQLite's writer runs them).
        rollup_task = asyncio.create_task(
            every(settings.rollup_interval_s, stop, partial(roll_up_history, current), "roll-ups")
        )
        matchmaker_task = None
        if settings.matchmaking_enabled:
            wake = app.state.referee.wake if settings.referee_enabled else None
            matchmaker = Matchmaker(current, through_referee(current, wake))
            matchmaker_task = asyncio.create_task(matchmaker.run(stop))
        try:
            yield
        finally:
            stop.set()
            if ratings_task is not None:
                # A recomputation still running is abandoned; the next start redoes it.
                await asyncio.wait([ratings_task], timeout=10)
                ratings_task.cancel()
                await asyncio.gather(ratings_task, return_exceptions=True)
            if matchmaker_task is not None:
                await matchmaker_task
            await retention_task  # a pass in progress ends at its next batch
            await rollup_task
            runs.wake()
            if runs_task is not None:
                await runs_task
            await runs.close()
            if monitor_task is not None:
                await monitor_task
            if referee_task is not None:
                await referee_task
            await app.state.throttle.close()
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
    app.state.throttle = Throttle(
        limit=settings.auth_throttle_failures,
        window_s=settings.auth_throttle_window_s,
        target_limit=settings.auth_throttle_target_failures,
        # Scaled out, the API processes share the broker's Redis, and so the counts.
        storage_url=settings.auth_throttle_url or settings.broker_url,
        forwarded_allow=settings.forwarded_allow_ips,
        prefix=f"{settings.broker_queue}-throttle",
    )
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
