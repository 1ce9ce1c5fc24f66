"""The workers' mode keeps the signed headers each dispatch carried: `serve --no-workers` and
a `worker` process on PostgreSQL and Redis, runs against agents on 127.0.0.1; every task's
row holds exactly the signed headers its agent received, and the API's task read shows them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import create_async_engine

from palaestra.protocol import SIGNED_HEADERS, UserAgent
from palaestra.store.models import Task
from tests.acceptance.cluster import Router, enter_agent, scale_out
from tests.acceptance.test_runs_scale_out import fleet, start_runs, until_finished
from tests.integration.platform_fixtures import reset_postgres
from tests.integration.servers import serve

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

SIZES = {"scouts": 2, "shortlist": 1, "builds": 1, "verifies": 1, "critiques": 1}


async def test_a_worker_keeps_the_signed_headers_its_agents_received(
    postgres_database: str, redis_url: str, tmp_path: Path
) -> None:
    await reset_postgres(postgres_database)
    edge = fleet()
    engine = create_async_engine(postgres_database)
    try:
        async with (
            serve(Router(edge)) as endpoint,
            scale_out(postgres_database, redis_url, tmp_path, workers=1) as cluster,
        ):
            for name, agent in edge.items():
                await enter_agent(cluster, name, agent.role, agent, endpoint.url(f"/{name}"))
            runs = await start_runs(cluster, 3, SIZES)
            await until_finished(cluster, engine, within_s=120)
            async with engine.connect() as connection:
                tasks = list((await connection.execute(select(Task))).all())
            sent = [t for t in tasks if t.agent_id is not None]
            assert sent
            first = sent[0]
            status, read = await cluster.call("GET", f"/api/runs/{first.run_id}/tasks/{first.id}")
    finally:
        await engine.dispose()
    assert {t.run_id for t in tasks} == set(runs)
    dispatches = {
        r.headers["x-edgearena-task-id"]: r
        for r in endpoint.received
        if r.method == "POST" and r.headers.get("User-Agent") == UserAgent.DISPATCH.value
    }
    # (The wizard's forged-signature check is a dispatch too, of a task no run has.)
    assert {t.id for t in sent} <= set(dispatches)
    for task in sent:
        received = dispatches[task.id].headers
        assert task.request_headers == {name: received[name] for name in SIGNED_HEADERS}
    assert status == 200, read
    assert read["request_headers"] == first.request_headers
