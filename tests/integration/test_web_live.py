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
from palaestra.store.models import Match, Run, Turn
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
            from palaestra.store.models import Match, Run, Turn

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


async def test_a_run_page_costs_a_304_until_the_run_moves_and_stops_asking_once_done(
    platform: Platform, clock: FrozenClock
) -> None:
    platform.settings.public_runs = True
    at_minute_start(clock)
    owner = await add_owner(still(platform))
    scout = await add_agent(platform, owner, "scout-atlas", "SCOUT")
    now = clock.now()
    sent = {"agent_id": scout, "status": "RUNNING", "sent_at": now - 12}
    run_id = await add_run(platform, [sent | {"deadline_at": now + 18}], status="RUNNING")
    path = f"/runs/{run_id}"
    async with running(platform) as api:
        status, tag, body = await poll(api, path)
        assert (status, bool(tag)) == (200, True)
        assert body.lstrip().startswith('<div id="run-live" class="live"')
        assert f'hx-get="{path}"' in body
        assert ">12 s of 30 s</span>" in body  # counted on by live.js between polls
        assert f'data-sent="{now - 12}"' in body
        assert (await poll(api, path, tag))[:2] == (304, tag)
        clock.advance(5)  # the seconds of a running task move no stamp: still 304
        assert (await poll(api, path, tag))[0] == 304

        # A step of the run writes its row: the page is drawn again.
        async with platform.db.session() as session, session.begin():
            await session.execute(
                update(Run).where(Run.id == run_id).values(updated_at=clock.now())
            )
        settle(clock)
        status, tag, body = await poll(api, path, tag)
        assert status == 200
        assert ">18 s of 30 s</span>" in body  # 12 + 5 + the settling second
        assert (await poll(api, path, tag))[0] == 304

        async with platform.db.session() as session, session.begin():
            await session.execute(
                update(Run)
                .where(Run.id == run_id)
                .values(status="COMPLETED", finished_at=clock.now(), updated_at=clock.now())
            )
        settle(clock)
        status, _, body = await poll(api, path, tag)
        assert status == 200
        assert 'data-status="COMPLETED"' in body
        assert "hx-get" not in body  # a finished run asks no more


async def test_a_task_opened_but_not_sent_is_drawn_again_at_the_next_poll(
    platform: Platform, clock: FrozenClock
) -> None:
    """Its send moves no stamp: the page that shows it is not kept as current."""
    platform.settings.public_runs = True
    at_minute_start(clock)
    owner = await add_owner(still(platform))
    scout = await add_agent(platform, owner, "scout-atlas", "SCOUT")
    opened = {"agent_id": scout, "status": "RUNNING", "deadline_at": clock.now() + 30}
    run_id = await add_run(platform, [opened], status="RUNNING")
    async with running(platform) as api:
        status, tag, _ = await poll(api, f"/runs/{run_id}")
        assert status == 200
        assert tag.endswith("-p")
        status, again, _ = await poll(api, f"/runs/{run_id}", tag)
        assert (status, again) == (200, tag)


async def test_a_private_run_page_answers_its_readers_only_whatever_the_tag(
    platform: Platform, clock: FrozenClock
) -> None:
    at_minute_start(clock)
    platform.settings.public_runs = True
    run_id = await add_run(still(platform), [], status="RUNNING")
    async with running(platform) as api:
        _, tag, _ = await poll(api, f"/runs/{run_id}")
        platform.settings.public_runs = False
        status, _, body = await poll(api, f"/runs/{run_id}", tag)
        assert status == 403
        assert "Runs are private" in body


async def test_a_match_page_costs_a_304_until_a_turn_is_played(
    platform: Platform, clock: FrozenClock
) -> None:
    at_minute_start(clock)
    owner = await add_owner(still(platform))
    one, two = await add_fighter(platform, owner, "one"), await add_fighter(platform, owner, "two")
    match_id = await add_match(
        platform, one, two, None, status="RUNNING", turns=[{"message": "turn one"}]
    )
    path = f"/matches/{match_id}"
    async with running(platform) as api:
        status, tag, body = await poll(api, path)
        assert status == 200
        assert body.lstrip().startswith('<div id="match-live" class="live"')
        assert "turn one" in body
        assert (await poll(api, path, tag))[:2] == (304, tag)
        clock.advance(2)  # the next turn is played two seconds on
        async with platform.db.session() as session, session.begin():
            session.add(
                Turn(
                    match_id=match_id,
                    turn=2,
                    side="defender",
                    fighter_id=two,
                    status="OK",
                    payload="payload 2",
                    message="turn two",
                    latency_ms=120.0,
                    started_at=clock.now(),
                    finished_at=clock.now(),
                )
            )
            await session.execute(
                update(Match)
                .where(Match.id == match_id)
                .values(next_turn=3, updated_at=clock.now())
            )
        settle(clock)
        status, tag, body = await poll(api, path, tag)
        assert status == 200
        assert "turn two" in body  # the chat, turn by turn
        assert (await poll(api, path, tag))[0] == 304
        async with platform.db.session() as session, session.begin():
            await session.execute(
                update(Match)
                .where(Match.id == match_id)
                .values(
                    status="SCORED",
                    outcome="draw",
                    decided_by="utility",
                    finished_at=clock.now(),
                    updated_at=clock.now(),
                )
            )
        settle(clock)
        status, _, body = await poll(api, path, tag)
        assert status == 200
        assert 'data-status="SCORED"' in body
        assert "hx-get" not in body  # a finished match asks no more
