"""Live pages that cost next to nothing while nothing changes.

A page's live part asks again every :data:`POLL_S` seconds, with the page's tag
(an entity tag, ``If-None-Match``) and the ``Palaestra-Live`` header. The tag is a
hash of the stamps of what the page shows (:mod:`.stamp_queries`), the page's
URL, who is signed in and the minute (so that "3 minutes ago" moves on). When it
has not changed the answer is ``304 Not Modified`` with no body: no page query, no
template. When it has, the answer is the live part alone, with its new tag.

The stamps are read once per :data:`STAMP_TTL_S` for all the open pages of this
process together: a hundred open pages cost one small read a second, not a
hundred. Pages whose rows cannot change (an older page of a list of finished
runs) do not ask at all; a hidden tab does not ask until it is shown again
(``static/live.js``).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Final

from fastapi import Request
from starlette.responses import Response

from palaestra import __version__
from palaestra.http.deps import services_of
from palaestra.http.headers import PAGE_POLICY
from palaestra.platform import Platform
from palaestra.web import run_queries
from palaestra.web.rendering import render, render_part
from palaestra.web.session import current
from palaestra.web.stamp_queries import Stamps, read_stamps

__all__ = [
    "AGE_STEP_S",
    "LIVE_HEADER",
    "POLL_S",
    "STAMP_TTL_S",
    "Live",
    "LiveCaches",
    "StampCache",
    "Topic",
    "live_caches",
    "live_for",
    "run_owner",
    "show",
]

#: How often an open page's live part asks whether it changed, in seconds.
POLL_S: Final = 2
#: How long one read of the stamps answers every page that asks.
STAMP_TTL_S: Final = 1.0
#: Relative times ("3 minutes ago") are redrawn at least this often, in seconds.
AGE_STEP_S: Final = 60
#: The request header that marks a poll for the live part of a page.
LIVE_HEADER: Final = "Palaestra-Live"


class Topic(StrEnum):
    """What a page shows, each watched by one part of :class:`Stamps`."""

    RUNS = "runs"
    MATCHES = "matches"
    AGENTS = "agents"
    EVENTS = "events"
    RATINGS = "ratings"


class StampCache:
    """The latest :class:`Stamps`, read at most once per ``ttl_s`` however many pages ask."""

    def __init__(self, platform: Platform, ttl_s: float = STAMP_TTL_S) -> None:
        self.platform = platform
        self.ttl_s = ttl_s
        self.reads = 0
        self._stamps: Stamps | None = None
        self._read_at = 0.0
        self._lock = asyncio.Lock()

    async def get(self) -> Stamps:
        if self._fresh():
            assert self._stamps is not None
            return self._stamps
        async with self._lock:  # the pages that ask meanwhile wait for this one read
            if not self._fresh():
                self._stamps = await read_stamps(self.platform)
                self._read_at = self.platform.clock.monotonic()
                self.reads += 1
            assert self._stamps is not None
            return self._stamps

    def _fresh(self) -> bool:
        elapsed = self.platform.clock.monotonic() - self._read_at
        return self._stamps is not None and 0 <= elapsed < self.ttl_s


@dataclass(frozen=True, slots=True)
class Live:
    """A page's live state: its tag, whether this request polls for the live part only,
    and whether the asker already holds this tag."""

    tag: str
    url: str
    poll: bool
    unchanged: bool

    @property
    def every(self) -> int:
        return POLL_S

    def provisional(self) -> Live:
        """This state with a tag no later poll computes: the page shows something about to
        change that no stamp follows (a task opened, not yet sent), so the next poll is
        answered in full."""
        return replace(self, tag=f"{self.tag}-p", unchanged=False)

    def not_modified(self) -> Response:
        # A browser revalidating a page it holds updates the stored headers with the 304's:
        # a 304 sent with the API's policy (it has no HTML body) would leave the page it
        # shows from its cache without its stylesheet and scripts.
        response = Response(status_code=304, headers={"Content-Security-Policy": PAGE_POLICY})
        return self.finish(response)

    def finish(self, response: Response) -> Response:
        """Tag ``response``: the page and its live part share a URL, caches tell them apart."""
        response.headers["ETag"] = f'"{self.tag}"'
        response.headers["Vary"] = f"HX-Request, {LIVE_HEADER}"
        return response


#: Run owners kept per process (a run's owner never changes): a private run's page asks
#: for none on each poll. Emptied when full.
_OWNERS_KEPT: Final = 10_000


@dataclass
class LiveCaches:
    """What the live pages of one application keep: the stamps, and the runs' owners."""

    stamps: StampCache
    owners: dict[str, str] = field(default_factory=dict)


def live_caches(request: Request) -> LiveCaches:
    """The application's caches, made on first use from its services' platform."""
    app = request.app
    caches: LiveCaches | None = getattr(app.state, "live_caches", None)
    if caches is None:
        caches = app.state.live_caches = LiveCaches(StampCache(services_of(request).platform))
    return caches


async def run_owner(request: Request, run_id: str) -> str | None:
    """The owner of the run (None: no such run, or none), read once per process."""
    owners = live_caches(request).owners
    found = owners.get(run_id)
    if found is None:
        found = await run_queries.run_owner(services_of(request).platform, run_id)
        if found is not None:
            if len(owners) >= _OWNERS_KEPT:
                owners.clear()
            owners[run_id] = found
    return found


async def live_for(request: Request, topics: Iterable[Topic]) -> Live:
    """The live state of the page ``request`` asks for, which shows ``topics``."""
    stamps = await live_caches(request).stamps.get()
    platform = services_of(request).platform
    signed = current(request)
    url = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    poll = request.headers.get(LIVE_HEADER) == "1"
    parts = (
        __version__,
        poll,
        url,
        signed.caller.owner_id if signed else None,
        signed.caller.is_admin if signed else None,
        int(platform.clock.now() // AGE_STEP_S),
        *(getattr(stamps, topic.value) for topic in topics),
    )
    tag = hashlib.blake2b(repr(parts).encode(), digest_size=12).hexdigest()
    held = request.headers.get("if-none-match", "")
    return Live(tag=tag, url=url, poll=poll, unchanged=f'"{tag}"' in held)


def show(request: Request, live: Live, name: str, *, poll: bool = True, **context: Any) -> Response:
    """The page ``name``, or only its ``live`` block when the request polls for it;
    ``poll`` says whether its live part keeps asking (some of its rows can still change)."""
    context.update(live=live, poll=poll)
    if live.poll:
        return live.finish(render_part(request, name, "live", **context))
    return live.finish(render(request, name, **context))
