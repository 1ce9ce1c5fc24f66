"""The web list pages page: Older and Newer links walk every row exactly once."""

from __future__ import annotations

import html
import re

import pytest

from palaestra.clock import FrozenClock
from palaestra.platform import Platform
from palaestra.web.list_queries import PAGE_SIZE
from tests.integration.arena_rows import add_agent, add_fighter, add_matches, add_owner, add_run
from tests.integration.platform_fixtures import Api, running
from tests.integration.web_support import page, still

pytestmark = pytest.mark.asyncio


def links(body: str, rel: str, anchor: str = "") -> list[str]:
    """The page's ``rel`` links (those of the list at ``anchor`` when a page has two)."""
    found = re.findall(rf'<a rel="{rel}" href="([^"]+)"', body)
    return [html.unescape(href) for href in found if href.endswith(anchor)]


async def walk_pages(api: Api, path: str, row: re.Pattern[str], anchor: str = "") -> list[str]:
    """Every row of a web list, following its Older links, then back by its Newer links."""
    seen: list[str] = []
    trail: list[str] = []
    next_path: str | None = path
    while next_path is not None:
        status, body = await page(api, next_path)
        assert status == 200
        trail.append(next_path)
        seen += row.findall(body)
        older = links(body, "next", anchor)
        next_path = older[0] if older else None
    for here, before in zip(trail[:0:-1], trail[-2::-1], strict=True):
        _, body = await page(api, here)
        (newer,) = links(body, "prev", anchor)
        assert newer.split("#")[0] == before.split("#")[0]
    return seen


async def test_the_web_lists_page_with_older_and_newer_links(platform: Platform) -> None:
    platform.settings.public_runs = True
    owner = await add_owner(still(platform))
    one, two = await add_fighter(platform, owner, "one"), await add_fighter(platform, owner, "two")
    count = PAGE_SIZE * 2 + 5
    await add_matches(platform, [(one, two, "attacker")] * count)
    runs = [await add_run(platform, [], goal=f"goal {i}") for i in range(PAGE_SIZE + 1)]
    agents = [await add_agent(platform, owner, f"agent-{i}", "SCOUT") for i in range(PAGE_SIZE + 2)]
    async with running(platform) as api:
        matches = await walk_pages(api, "/matches", re.compile(r'href="/matches/([^"]+)"'))
        assert len(matches) == len(set(matches)) == count
        seen_runs = await walk_pages(api, "/runs", re.compile(r'href="/runs/([^"#/]+)"'))
        assert seen_runs == runs[::-1]
        seen_agents = await walk_pages(api, "/agents", re.compile(r'href="/agents/([^"]+)"'))
        assert seen_agents == agents[::-1]
        _, first = await page(api, "/agents")
        assert f'<span class="count">{len(agents)}</span>' in first  # the total, not the page's
        assert links(first, "prev") == []
        assert re.search(r'<a rel="next" href="/agents\?cursor=[^"]+">Older →</a>', first)


async def test_each_list_of_the_agents_page_pages_on_its_own(platform: Platform) -> None:
    owner = await add_owner(still(platform))
    for i in range(PAGE_SIZE + 1):
        await add_agent(platform, owner, f"agent-{i}", "SCOUT")
        await add_fighter(platform, owner, f"fighter-{i}")
    async with running(platform) as api:
        _, first = await page(api, "/agents")
        agents_next, fighters_next = links(first, "next")
        assert agents_next.startswith("/agents?cursor=")
        assert agents_next.endswith("#edgearena")
        assert fighters_next.startswith("/agents?fighters_cursor=")
        _, second = await page(api, agents_next)
        (fighters_then,) = links(second, "next")  # the agents' list has ended
        agents_cursor = agents_next.split("cursor=")[1].split("#")[0]
        assert f"cursor={agents_cursor}" in fighters_then  # the agents' page is kept
        _, both = await page(api, fighters_then)
        assert len(re.findall(r'data-agent="', both)) == 1
        assert len(re.findall(r'data-fighter="', both)) == 1


async def test_the_leaderboard_table_pages_and_keeps_its_filters(
    platform: Platform, clock: FrozenClock
) -> None:
    from palaestra.engine.ratings.leaderboard import recompute
    from palaestra.protocol.constants import Arena
    from palaestra.web.board_queries import PAGE_SIZE as BOARD_PAGE

    still(platform).settings.leaderboard_resamples = 20
    names = [f"fighter-{i:03d}" for i in range(2 * BOARD_PAGE + 4)]
    ids = []
    for i, name in enumerate(names):
        owner = await add_owner(platform, f"owner-{i}")
        ids.append(
            await add_fighter(platform, owner, name, fighter_class=("rogue", "academic")[i % 2])
        )
    games = [
        (ids[i], ids[(i + step) % len(ids)], ("attacker", "defender")[(i + step) % 2])
        for i in range(len(ids))
        for step in (1, 2, 3)
    ]
    await add_matches(platform, games)
    await recompute(platform, Arena.CAGE)
    row = re.compile(r'data-fighter-row="([^"]+)"')
    async with running(platform) as api:
        everyone = await walk_pages(api, "/leaderboard", row, "#published")
        assert sorted(everyone) == names  # each once
        rogues = await walk_pages(api, "/leaderboard?class=rogue", row, "#published")
        assert sorted(rogues) == names[::2]
        _, first = await page(api, "/leaderboard?class=rogue")
        (older,) = links(first, "next", "#published")
        assert "class=rogue" in older  # the filter goes along
        assert older.endswith("#published")
        clock.advance(1)
        await recompute(platform, Arena.CAGE)  # a stale link shows the top of the new table
        status, body = await page(api, older)
        assert status == 200
        assert row.findall(body)[:3] == rogues[:3]


async def test_the_live_table_pages_best_first_and_keeps_its_filters(platform: Platform) -> None:
    from palaestra.engine.ratings.live import rate_pending
    from palaestra.web.board_queries import PAGE_SIZE as BOARD_PAGE

    names = [f"fighter-{i:03d}" for i in range(2 * BOARD_PAGE + 3)]
    ids = []
    for i, name in enumerate(names):
        owner = await add_owner(still(platform), f"owner-{i}")
        ids.append(
            await add_fighter(platform, owner, name, fighter_class=("rogue", "academic")[i % 2])
        )
    # A few fighters rated apart; the rest share the starting rating, ordered by name.
    await add_matches(platform, [(ids[i], ids[i + 1], "attacker") for i in range(0, 8, 2)])
    await rate_pending(platform)
    row = re.compile(r'<tr data-live="([^"]+)">')
    async with running(platform) as api:
        everyone = await walk_pages(api, "/leaderboard", row, "#live")
        assert sorted(everyone) == names  # each once
        assert everyone[:4] == [names[i] for i in range(0, 8, 2)]  # the winners on top
        rogues = await walk_pages(api, "/leaderboard?class=rogue", row, "#live")
        assert sorted(rogues) == names[::2]
        _, first = await page(api, "/leaderboard?class=rogue")
        (lower,) = links(first, "next", "#live")
        assert "class=rogue" in lower
        assert lower.endswith("#live")
        _, second = await page(api, lower)
        assert re.search(r'<a rel="next" href="[^"]+#live">Lower →</a>', first)
        assert re.search(r'<a rel="prev" href="[^"]+#live">← Higher</a>', second)
        ranks = re.findall(r'<tr data-live="[^"]+">\s*<td class="num">(\d+)</td>', second)
        assert ranks[0] == str(BOARD_PAGE + 1)  # ranks count from the top of the whole table
        status, body = await page(api, "/leaderboard?live_cursor=not-a-cursor")
        assert status == 200
        assert row.findall(body)[:3] == everyone[:3]  # a cursor no page gave: the top


async def test_the_edgearena_table_pages_and_each_table_keeps_the_others_page(
    platform: Platform,
) -> None:
    from palaestra.engine.ratings.leaderboard import recompute
    from palaestra.protocol.constants import Arena
    from palaestra.web.board_queries import PAGE_SIZE as BOARD_PAGE

    owner = await add_owner(still(platform))
    roles = ("SCOUT", "BUILDER")  # no ANALYST: its section says so, on the first page only
    names = [f"agent-{i:03d}" for i in range(2 * BOARD_PAGE + 3)]
    for i, name in enumerate(names):
        await add_agent(platform, owner, name, roles[i % 2], reputation=i / 1000)
    for i in range(BOARD_PAGE + 1):  # enough fighters for the live table to page too
        await add_fighter(platform, await add_owner(platform, f"o-{i}"), f"fighter-{i:03d}")
    await recompute(platform, Arena.EDGEARENA)
    row = re.compile(r'<tr data-agent-row="([^"]+)">')
    async with running(platform) as api:
        seen = await walk_pages(api, "/leaderboard", row, "#edgearena")
        assert sorted(seen) == names  # each once
        builders, scouts = names[1::2], names[::2]
        assert seen == scouts[::-1] + builders[::-1]  # by role, then reputation, best first
        _, first = await page(api, "/leaderboard")
        assert "No ANALYST agent yet." in first
        (lower,) = links(first, "next", "#edgearena")
        _, second = await page(api, lower)
        assert "No ANALYST agent yet." not in second
        # The live table's next page keeps the edgearena table's page, and back.
        (live_next,) = links(second, "next", "#live")
        _, both = await page(api, live_next)
        assert row.findall(both) == row.findall(second)
        (edge_back,) = links(both, "prev", "#edgearena")
        assert "live_cursor=" in edge_back
        assert "edge_cursor=" not in edge_back  # back to its first page


async def test_a_fighters_matches_page_and_its_record_counts_them_all(platform: Platform) -> None:
    owner, other = await add_owner(still(platform), "a"), await add_owner(platform, "b")
    one = await add_fighter(platform, owner, "one")
    two = await add_fighter(platform, other, "two")
    three = await add_fighter(platform, other, "three")
    games = [(one, two, "attacker")] * (PAGE_SIZE + 4) + [(two, one, "attacker")] * 3
    await add_matches(platform, [*games, (two, three, "draw")])  # not one's
    async with running(platform) as api:
        seen = await walk_pages(
            api, f"/fighters/{one}", re.compile(r'href="/matches/([^"]+)"'), "#matches"
        )
        assert len(seen) == len(set(seen)) == PAGE_SIZE + 7  # each of its matches once
        _, first = await page(api, f"/fighters/{one}")
    shown = re.findall(r'<span class="num">(\d+)</span><span class="lbl">(\w+)</span>', first)
    record = {label: int(count) for count, label in shown}
    assert record == {"won": PAGE_SIZE + 4, "lost": 3, "drawn": 0, "voided": 0}


async def test_an_agents_failures_page_newest_first(platform: Platform) -> None:
    from palaestra.store.models import AgentEvent

    owner = await add_owner(still(platform))
    agent_id = await add_agent(platform, owner, "flaky", "SCOUT")
    now = platform.clock.now()
    count = 2 * 100 + 7  # the page holds 100 failures
    async with platform.db.session() as session, session.begin():
        for i in range(count):
            outcome = "failure" if i % 3 else "success"  # successes are not listed
            session.add(
                AgentEvent(
                    agent_id=agent_id,
                    at=now - 60.0 * (3 * count - i),
                    kind="ping",
                    outcome=outcome,
                    latency_ms=1.0,
                    reason="External agent timed out",
                )
            )
    failures = [i for i in range(count) if i % 3]
    row = re.compile(r'<tr class="failure">\s*<td title="([^"]+)"')
    async with running(platform) as api:
        seen = await walk_pages(api, f"/agents/{agent_id}", row, "#failures")
        assert len(seen) == len(set(seen)) == len(failures)  # each once
        assert seen == sorted(seen, reverse=True)  # newest first
        _, first = await page(api, f"/agents/{agent_id}")
        assert f'<h2>Failures <span class="count">{len(failures)}</span></h2>' in first
        status, _ = await page(api, f"/agents/{agent_id}?failures_cursor=junk")
        assert status == 400


async def test_the_owner_pages_an_agents_failures_with_the_token_in_the_form(
    platform: Platform,
) -> None:
    from palaestra.store.models import AgentEvent
    from tests.integration.web_support import post_form

    token = "pa_owner_alice-token-for-the-paging-test"
    owner = await add_owner(still(platform), "alice", token=token)
    agent_id = await add_agent(platform, owner, "flaky", "SCOUT")
    async with running(platform) as api:
        now = platform.clock.now()
        async with platform.db.session() as session, session.begin():
            for i in range(150):
                session.add(
                    AgentEvent(
                        agent_id=agent_id,
                        at=now - 60.0 * (200 - i),
                        kind="ping",
                        outcome="failure",
                        latency_ms=1.0,
                        reason=f"External agent responded with 500: detail {i:03d}",
                    )
                )
        whole = re.compile(r'<td class="reason">External agent responded with 500: detail (\d{3})')
        path = f"/agents/{agent_id}"
        status, first, headers = await post_form(api, path, {"token": token})
        assert status == 200
        assert headers["Cache-Control"] == "no-store"
        assert whole.findall(first) == [f"{i:03d}" for i in range(149, 49, -1)]  # the newest 100
        assert links(first, "next", "#failures") == []  # no plain link: it would drop the token
        older = re.search(r'name="failures_cursor" value="([^"]+)"', first)
        assert older is not None
        form = {"token": token, "failures_cursor": older.group(1)}
        status, second, _ = await post_form(api, path, form)
        assert status == 200
        assert whole.findall(second) == [f"{i:03d}" for i in range(49, -1, -1)]  # whole reasons
        assert '<button type="submit" class="link">← Newer</button>' in second
        status, _, _ = await post_form(api, path, {**form, "token": "wrong"})
        assert status == 401
