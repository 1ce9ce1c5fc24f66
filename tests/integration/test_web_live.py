"""The live pages: a poll is answered 304 while nothing the page shows changed, and the live
part alone once something did, on both stores and whoever wrote the change."""

from __future__ import annotations

import asyncio
import re
import sys
import textwrap

import pytest
from sqlalchemy import update

from palaestra.clock import FrozenClock
from palaestra.http.headers import PAGE_POLICY
from palaestra.platform import Platform
from palaestra.store.models import Run
from palaestra.web.live import AGE_STEP_S, LIVE_HEADER, STAMP_TTL_S, StampCache
from tests.integration.arena_rows import add_agent, add_fighter, add_match, add_owner, add_run
from tests.integration.platform_fixtures import Api, running
from tests.integration.web_support import HTML, still

pytestmark = pytest.mark.asyncio


async def poll(api: Api, path: str, tag: str | None = None) -> tuple[int, str, str]:
    """Ask for ``path``'s live part as the page's live part does: its status, tag and body."""
    headers = {**HTML, "HX-Request": "true", LIVE_HEADER: "1"}
    if tag:
        headers["If-None-Match"] = f'"{tag}"'
    async with api.session.get(api.base + path, headers=headers) as response:
        body = await response.text()
        return response.status, response.headers.get("ETag", "").strip('"'), body


def settle(clock: FrozenClock) -> None:
    """Past the stamps' time to live, within the same minute (ages unchanged)."""
    clock.advance(STAMP_TTL_S + 0.1)


def at_minute_start(clock: FrozenClock) -> None:
    clock.current = (clock.current // AGE_STEP_S + 1) * AGE_STEP_S


async def test_a_poll_costs_a_304_until_what_the_page_shows_changes(
    platform: Platform, clock: FrozenClock
) -> None:
    platform.settings.public_runs = True
    at_minute_start(clock)
    owner = await add_owner(still(platform))
    one, two = await add_fighter(platform, owner, "one"), await add_fighter(platform, owner, "two")
    await add_run(platform, [], goal="the first goal")
    async with running(platform) as api:
        pages = ("/", "/runs", "/matches", "/agents", "/leaderboard", f"/fighters/{one}")
        tags = {}
        for path in pages:
            status, tag, body = await poll(api, path)
            assert (status, bool(tag)) == (200, True), path
            assert "<html" not in body, path  # the live part alone
            assert 'class="live"' in body, path
            assert (await poll(api, path, tag))[:2] == (304, tag), path
            tags[path] = tag

        await add_run(platform, [], goal="a goal started meanwhile", status="RUNNING")
        settle(clock)
        status, new_tag, body = await poll(api, "/runs", tags["/runs"])
        assert status == 200
        assert new_tag != tags["/runs"]
        assert "a goal started meanwhile" in body
        assert (await poll(api, "/matches", tags["/matches"]))[0] == 304  # not about runs
        assert (await poll(api, "/", tags["/"]))[0] == 200

        await add_match(platform, one, two, None, status="RUNNING")
        settle(clock)
        for path in ("/matches", f"/fighters/{one}"):
            assert (await poll(api, path, tags[path]))[0] == 200, path
        await add_agent(platform, owner, "late-scout", "SCOUT")
        settle(clock)
        status, _, body = await poll(api, "/agents", tags["/agents"])
        assert status == 200
        assert "late-scout" in body

        # Nothing changed, but "1 min ago" must move on: the minute is part of the tag.
        _, tag, _ = await poll(api, "/matches")
        clock.advance(AGE_STEP_S)
        assert (await poll(api, "/matches", tag))[0] == 200


async def test_a_page_revalidated_by_the_browser_keeps_the_page_policy(
    platform: Platform, clock: FrozenClock
) -> None:
    """A browser that holds the page asks with its tag and shows what it holds on a 304,
    with the 304's headers: they must be the page's, not the API's."""
    at_minute_start(clock)
    async with running(still(platform)) as api:
        async with api.session.get(api.base + "/matches", headers=HTML) as response:
            assert response.status == 200
            tag, policy = response.headers["ETag"], response.headers["Content-Security-Policy"]
        again = {**HTML, "If-None-Match": tag}
        async with api.session.get(api.base + "/matches", headers=again) as response:
            assert response.status == 304
            assert response.headers["Content-Security-Policy"] == policy == PAGE_POLICY


async def test_a_running_run_finishing_changes_the_lists_tag(
    platform: Platform, clock: FrozenClock
) -> None:
    platform.settings.public_runs = True
    at_minute_start(clock)
    run_id = await add_run(still(platform), [], status="RUNNING")
    async with running(platform) as api:
        _, tag, body = await poll(api, "/runs")
        assert "so far" in body  # a running run's duration, counted to now
        async with platform.db.session() as session, session.begin():
            await session.execute(
                update(Run)
                .where(Run.id == run_id)
                .values(status="COMPLETED", finished_at=clock.now(), updated_at=clock.now())
            )
        settle(clock)
        status, _, body = await poll(api, "/runs", tag)
        assert status == 200
        assert "run-COMPLETED" in body


async def test_many_polls_share_one_read_of_the_stamps(
    platform: Platform, clock: FrozenClock
) -> None:
    cache = StampCache(still(platform))
    first = await cache.get()
    for _ in range(50):
        assert await cache.get() == first
    assert cache.reads == 1
    settle(clock)
    await cache.get()
    assert cache.reads == 2


async def test_older_pages_of_finished_rows_do_not_poll(platform: Platform) -> None:
    platform.settings.public_runs = True
    for i in range(51):
        await add_run(still(platform), [], goal=f"goal {i}")
    async with running(platform) as api:
        status, _, first = await poll(api, "/runs")
        assert status == 200
        assert "hx-trigger" in first
        older = re.search(r'<a rel="next" href="([^"]+)"', first)
        assert older
        _, _, body = await poll(api, older.group(1).replace("&amp;", "&"))
        assert "hx-trigger" not in body  # every run on it finished: nothing to ask for


async def test_a_change_written_by_another_process_is_seen(
    platform: Platform, clock: FrozenClock
) -> None:
    """With PostgreSQL the workers write from other processes: the stamps read the database."""
    platform.settings.public_runs = True
    at_minute_start(clock)
    still(platform)
    async with running(platform) as api:
        _, tag, _ = await poll(api, "/runs")
        url = platform.settings.effective_database_url
        script = textwrap.dedent(
            f"""
            import asyncio, time
            from palaestra.ids import new_id
            from palaestra.store.db import Database
            from palaestra.store.models import Run

            async def main():
                db = Database({url!r})
                now = time.time()
                async with db.session() as session, session.begin():
                    session.add(Run(
                        id=new_id(), owner_id=None, goal="written elsewhere",
                        launchpad="make-money", status="RUNNING", phase="SCOUT",
                        config={{}}, created_at=now, updated_at=now,
                    ))
                await db.dispose()

            asyncio.run(main())
            """
        )
        process = await asyncio.create_subprocess_exec(sys.executable, "-c", script)
        assert await process.wait() == 0
        settle(clock)
        status, _, body = await poll(api, "/runs", tag)
        assert status == 200
        assert "written elsewhere" in body
