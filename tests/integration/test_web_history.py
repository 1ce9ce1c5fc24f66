"""History on the pages: the tasks an agent served, and one task as it was signed and sent and
as it was answered; who may read which of it."""

from __future__ import annotations

import html
from typing import Any

import pytest
from sqlalchemy import select, text, update

from palaestra.platform import Platform
from palaestra.store.models import CompletionReceipt, Task
from palaestra.store.paging import Key, encode_cursor
from palaestra.web import list_queries
from palaestra.web.reasons import Audience
from tests.integration.arena_rows import add_agent, add_run
from tests.integration.browser_support import browser, owner_of
from tests.integration.platform_fixtures import ADMIN_TOKEN, running
from tests.integration.web_support import still

pytestmark = pytest.mark.asyncio

#: A reason carrying what the agent sent, a secret among it.
LEAKY = "External agent responded with 500: db password=hunter2 at db.internal"
PROMPT = "Name three businesses for night owls"
PAYLOAD = {
    "taskId": "t",
    "runId": "r",
    "phase": "SCOUT",
    "role": "SCOUT",
    "candidateId": None,
    "goal": "A bakery for night owls",
    "launchpadName": "make-money",
    "messages": [{"role": "user", "content": PROMPT}],
}
OUTPUT = {"candidate_title": "Moonlight Bakes", "pitch": "bread at 3 am"}
SIGNATURE = "sha256=" + "5e" * 32


async def tasks_of(platform: Platform, run_id: str) -> list[Task]:
    async with platform.db.session() as session:
        found = await session.scalars(select(Task).where(Task.run_id == run_id).order_by(Task.slot))
        return list(found)


async def test_an_agents_tasks_a_page_at_a_time_with_reasons_as_its_audience_reads_them(
    platform: Platform,
) -> None:
    still(platform).settings.public_runs = True
    async with running(platform) as api, browser(api) as alice, browser(api) as anyone:
        token = await api.owner("alice")
        owner = await owner_of(platform, token)
        agent = await add_agent(platform, owner, "scout-h", "SCOUT")
        other = await add_agent(platform, owner, "scout-other", "SCOUT")
        served: list[dict[str, Any]] = [
            {"agent_id": agent, "status": "SUCCEEDED", "latency_ms": 1234.0, "contribution": 0.4},
            {"agent_id": agent, "status": "FAILED", "latency_ms": 80.0, "reason": LEAKY},
            {"agent_id": other, "status": "SUCCEEDED", "latency_ms": 10.0},
            {"agent_id": agent, "status": "TIMEOUT", "phase": "SCOUT"},
        ]
        run = await add_run(platform, served, owner_id=owner)
        mine = [t.id for t in await tasks_of(platform, run) if t.agent_id == agent]

        status, page = (await anyone.get(f"/agents/{agent}/tasks"))[:2]
        assert status == 200
        assert sorted(page.count(f'href="/tasks/{t}"') for t in mine) == [1, 1, 1]
        assert f'href="/runs/{run}#task-' in page
        assert "1.2 s" in page
        assert "0.40" in page
        assert "External agent responded with 500" in page
        assert "hunter2" not in page
        assert "db.internal" not in page
        assert 'data-status="TIMEOUT"' in page
        # The agent's page links to the list.
        assert f'href="/agents/{agent}/tasks"' in (await anyone.get(f"/agents/{agent}"))[1]

        await alice.sign_in(token)
        _, own, headers = await alice.get(f"/agents/{agent}/tasks")
        assert "db.internal" in own  # the owner reads the whole reason...
        assert "hunter2" not in own  # ...with the secret redacted
        assert headers["Cache-Control"] == "no-store"

        assert (await anyone.get("/agents/nobody/tasks"))[0] == 404

    # A page at a time, newest first, with the cursors around it.
    first = await list_queries.agent_tasks_page(platform, agent, None, Audience.PUBLIC, limit=2)
    assert len(first.items) == 2
    assert first.next_cursor is not None
    second = await list_queries.agent_tasks_page(
        platform, agent, first.next_cursor, Audience.PUBLIC, limit=2
    )
    assert [t.id for t in second.items] not in ([], [t.id for t in first.items])
    assert second.next_cursor is None
    assert second.previous_cursor == ""
    assert {t.id for t in first.items + second.items} == set(mine)
    newest = first.items + second.items
    assert [(t.created_at, t.id) for t in newest] == sorted(
        ((t.created_at, t.id) for t in newest), reverse=True
    )


async def test_where_runs_are_private_an_agents_tasks_are_read_as_runs_are(
    platform: Platform,
) -> None:
    """Its owner and the admin read every task; another owner the tasks of its own runs;
    a browser not signed in none of them."""
    still(platform).settings.public_runs = False
    async with (
        running(platform) as api,
        browser(api) as alice,
        browser(api) as bob,
        browser(api) as admin,
        browser(api) as anyone,
    ):
        alice_token, bob_token = await api.owner("alice"), await api.owner("bob")
        carol = await owner_of(platform, await api.owner("carol"))
        agent = await add_agent(platform, await owner_of(platform, alice_token), "scout-p", "SCOUT")
        served = [{"agent_id": agent, "status": "FAILED", "reason": LEAKY}]
        bobs = await add_run(platform, served, owner_id=await owner_of(platform, bob_token))
        carols = await add_run(platform, served, owner_id=carol)
        [bobs_task], [carols_task] = (
            await tasks_of(platform, bobs),
            await tasks_of(platform, carols),
        )
        path = f"/agents/{agent}/tasks"

        status, page, _ = await anyone.get(path)
        assert (status, "Runs are private" in page) == (403, True)
        assert bobs_task.id not in page

        await bob.sign_in(bob_token)
        status, page, headers = await bob.get(path)
        assert status == 200
        assert headers["Cache-Control"] == "no-store"
        assert f'href="/tasks/{bobs_task.id}"' in page
        assert carols_task.id not in page
        assert carols not in page
        assert 'id="own-runs-only"' in page
        assert "db.internal" not in page  # the agent's reasons stay its owner's

        await alice.sign_in(alice_token)
        await admin.sign_in(ADMIN_TOKEN)
        for reader in (alice, admin):
            status, page, _ = await reader.get(path)
            assert status == 200
            assert f'href="/tasks/{bobs_task.id}"' in page
            assert f'href="/tasks/{carols_task.id}"' in page
            assert "db.internal" in page
            assert 'id="own-runs-only"' not in page

    # The other owner's page is still one range of the agent's index, its runs read by key.
    mine = await list_queries.agent_tasks_page(
        platform, agent, None, Audience.PUBLIC, limit=1, run_owner=carol
    )
    assert [t.id for t in mine.items] == [carols_task.id]
    assert mine.next_cursor is None


async def test_a_page_of_an_agents_tasks_is_one_range_of_its_index_and_no_sort(
    platform: Platform,
) -> None:
    """However long the agent's history, a page reads its rows in the index's order and
    stops: the plan uses ``ix_tasks_agent_created`` and sorts nothing."""
    query = list_queries.agent_tasks_query("an-agent", encode_cursor(Key(1.5, "a-task")), 50)
    dialect = platform.db.engine.dialect
    sql = str(query.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
    async with platform.db.engine.connect() as connection:
        if dialect.name == "sqlite":
            rows = await connection.execute(text("EXPLAIN QUERY PLAN " + sql))
            plan = " ".join(str(row) for row in rows)
            assert "TEMP B-TREE" not in plan
        else:
            # An empty table is cheapest read whole: ask for the plan a long history gets.
            await connection.execute(text("SET enable_seqscan = off"))
            await connection.execute(text("SET enable_bitmapscan = off"))
            plan = " ".join(str(row) for row in await connection.execute(text("EXPLAIN " + sql)))
            assert "Sort" not in plan
    assert "ix_tasks_agent_created" in plan


async def sent_task(platform: Platform, run_id: str, slot: int, **values: object) -> Task:
    """The run's task at ``slot``, as a dispatch leaves it once sent and answered."""
    task = (await tasks_of(platform, run_id))[slot]
    async with platform.db.session() as session, session.begin():
        await session.execute(update(Task).where(Task.id == task.id).values(**values))
    return task


async def test_a_task_shows_the_request_as_sent_and_the_reply_to_whom_may_read_its_run(
    platform: Platform,
) -> None:
    still(platform)
    platform.settings.public_runs = False
    now = platform.clock.now()
    async with (
        running(platform) as api,
        browser(api) as alice,
        browser(api) as bob,
        browser(api) as carol,
        browser(api) as admin,
        browser(api) as anyone,
    ):
        tokens = {name: await api.owner(name) for name in ("alice", "bob", "carol")}
        alice_id = await owner_of(platform, tokens["alice"])
        bob_id = await owner_of(platform, tokens["bob"])
        own_agent = await add_agent(platform, alice_id, "scout-a", "SCOUT")
        bobs_agent = await add_agent(platform, bob_id, "scout-b", "SCOUT")
        run = await add_run(
            platform,
            [
                {"agent_id": own_agent, "status": "SUCCEEDED"},
                {"agent_id": bobs_agent, "status": "FAILED", "reason": LEAKY},
                {"agent_id": own_agent, "status": "SUCCEEDED"},
                {"agent_id": None, "status": "SUCCEEDED", "executor": "house-baseline"},
            ],
            owner_id=alice_id,
        )
        sync = await sent_task(
            platform,
            run,
            0,
            payload=PAYLOAD,
            output=OUTPUT,
            sent_at=now - 5,
            deadline_at=now + 85,
            completed_at=now - 4,
            via="sync",
            producer="agent",
            latency_ms=987.0,
        )
        kept = {  # as the send path keeps them: the signer's headers
            "x-edgearena-signature": SIGNATURE,
            "x-edgearena-timestamp": str(int(now - 6)),
            "x-edgearena-task-id": sync.id,
        }
        await sent_task(platform, run, 0, request_headers=kept)
        failed = await sent_task(
            platform, run, 1, payload=PAYLOAD, sent_at=now - 5, latency_ms=20.0
        )
        called = await sent_task(
            platform,
            run,
            2,
            payload=None,  # archived since
            output=OUTPUT,
            sent_at=now - 60,
            deferred_at=now - 59,
            via="callback",
            producer="agent",
        )
        house = await sent_task(platform, run, 3, output=OUTPUT, producer="house_baseline")
        async with platform.db.session() as session, session.begin():
            session.add(
                CompletionReceipt(
                    task_id=called.id, signature="sha256=" + "ab" * 32, received_at=now - 30
                )
            )
        for name, who in (("alice", alice), ("bob", bob), ("carol", carol)):
            await who.sign_in(tokens[name])
        await admin.sign_in(ADMIN_TOKEN)

        status, page, headers = await alice.get(f"/tasks/{sync.id}")
        assert status == 200
        assert headers["Cache-Control"] == "no-store"
        text = html.unescape(page)
        assert "POST https://agents.example/scout-a" in text
        for name, value in (
            ("Host", "agents.example"),
            ("User-Agent", "EdgeArena-Dispatch/1.0"),
            ("Content-Type", "application/json"),
            ("x-edgearena-signature", SIGNATURE),
            ("x-edgearena-timestamp", str(int(now - 6))),  # the second it was signed
            ("x-edgearena-task-id", sync.id),
        ):
            row = f'<th scope="row" class="mono">{name}</th><td><span class="mono">{value}</span>'
            assert f'<tr data-header="{name}">{row}' in page, name
        assert "<em>not kept</em>" not in page
        assert 'id="request-headers-note"' not in page
        assert PROMPT in text
        assert '"candidate_title": "Moonlight Bakes"' in text
        assert 'data-producer="agent"' in page
        assert "987 ms" in page

        # The run's owner reads what its run sent to another owner's agent, but not the
        # whole reason of that agent's failure; the agent's owner does, redacted.
        _, page, _ = await alice.get(f"/tasks/{failed.id}")
        assert PROMPT in html.unescape(page)
        # Sent before the arena kept the signed headers: their names, and says so.
        assert '<tr data-header="x-edgearena-signature">' in page
        assert page.count("<em>not kept</em>") == 3
        assert "tasks sent before the arena kept them did not keep them" in page
        assert "db.internal" not in page
        assert "No answer kept: the task failed" in page
        status, page, _ = await bob.get(f"/tasks/{failed.id}")
        assert status == 200
        assert PROMPT in html.unescape(page)
        assert "db.internal" in page
        assert "hunter2" not in page
        # ... and no other task of the run.
        assert (await bob.get(f"/tasks/{sync.id}"))[0] == 404

        _, page, _ = await alice.get(f"/tasks/{called.id}")
        assert "Not kept here: this task's payload has been archived." in page
        assert "Accepted by the completion callback" in page
        assert "sha256=" + "ab" * 32 in page
        assert "The callback as received" in page
        assert "Moonlight Bakes" in page
        _, page, _ = await alice.get(f"/tasks/{house.id}")
        assert "Answered in the arena by its house agent" in page
        assert 'data-producer="house_baseline"' in page

        assert (await admin.get(f"/tasks/{sync.id}"))[0] == 200
        # Another owner, and a browser not signed in, read nothing of it.
        status, page, _ = await carol.get(f"/tasks/{sync.id}")
        assert status == 404
        assert PROMPT not in page
        assert "Moonlight" not in page
        status, page, _ = await anyone.get(f"/tasks/{sync.id}")
        assert status == 403
        assert PROMPT not in page
        assert "Moonlight" not in page
        assert (await anyone.get("/tasks/nothing"))[0] == 403  # the same answer: nothing said
        assert (await alice.get("/tasks/nothing"))[0] == 404

        # Public runs: anyone reads the task and its reply, not the prompts nor the path.
        platform.settings.public_runs = True
        status, page, _ = await anyone.get(f"/tasks/{sync.id}")
        assert status == 200
        assert "Moonlight Bakes" in page
        assert PROMPT not in html.unescape(page)
        assert "POST agents.example" in page
        assert "/scout-a" not in page.split('id="request"')[1]
        assert 'id="request-body-withheld"' in page


async def test_the_overview_shows_the_signed_in_owners_recent_runs(platform: Platform) -> None:
    still(platform)
    platform.settings.public_runs = False
    async with running(platform) as api, browser(api) as alice, browser(api) as anyone:
        alice_token, bob_token = await api.owner("alice"), await api.owner("bob")
        await add_run(platform, [], owner_id=await owner_of(platform, alice_token), goal="Alice's")
        await add_run(platform, [], owner_id=await owner_of(platform, bob_token), goal="Bob's")
        _, page, _ = await anyone.get("/")
        assert 'id="my-runs"' not in page
        assert "Alice&#39;s" not in page
        await alice.sign_in(alice_token)
        _, page, _ = await alice.get("/")
        mine = page.split('id="my-runs"')[1].split("</section>")[0]
        assert "Alice&#39;s" in mine
        assert "Bob&#39;s" not in page
