"""The admin token: configured, or generated once and shown once."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import SecretStr
from sqlalchemy import event

from palaestra.engine.accounts import authenticate, bootstrap_admin, create_owner
from palaestra.errors import Unauthorized
from palaestra.platform import Platform
from palaestra.security import hash_token
from palaestra.settings import Settings
from tests.integration.platform_fixtures import reset_postgres

pytestmark = pytest.mark.asyncio


async def test_generated_admin_token_is_returned_once_and_works(settings: Settings) -> None:
    if settings.database_url and settings.database_url.startswith("postgresql"):
        await reset_postgres(settings.database_url)  # the process's database: an earlier admin
    settings.admin_token = None
    platform = await Platform.open(settings)
    try:
        token = await bootstrap_admin(platform)
        assert token is not None
        assert token.startswith("pa_admin_")
        assert await bootstrap_admin(platform) is None  # never shown again
        assert (await authenticate(platform, token)).is_admin
        with pytest.raises(Unauthorized, match="Invalid bearer token"):
            await authenticate(platform, token + "x")
        with pytest.raises(Unauthorized, match="Missing bearer token"):
            await authenticate(platform, None)
    finally:
        await platform.close()


async def test_owner_tokens_authenticate_their_owner(platform: Platform) -> None:
    owner, token = await create_owner(platform, "  Ada  ")
    assert owner.name == "Ada"
    caller = await authenticate(platform, token)
    assert (caller.owner_id, caller.is_admin) == (owner.id, False)
    assert token not in owner.token_hash


async def test_an_owner_is_remembered_and_a_new_admin_token_takes_effect_at_once(
    platform: Platform,
) -> None:
    owner, token = await create_owner(platform, "Ada")
    assert (await authenticate(platform, token)).owner_id == owner.id
    assert (
        platform.owner_tokens.owner(hash_token(token), platform.clock.monotonic()) == owner.id
    )  # no query the next time
    assert (await authenticate(platform, token)).owner_id == owner.id
    with pytest.raises(Unauthorized, match="Invalid bearer token"):
        await authenticate(platform, token + "x")  # an unknown token is never remembered
    assert len(platform.owner_tokens) == 1

    # A new admin token (here the owner's own, the worst case) is the admin's at once, and
    # the old admin token is refused at once.
    old = "pa_admin_old-" + "x" * 32
    platform.settings.admin_token = SecretStr(old)
    await bootstrap_admin(platform)
    assert (await authenticate(platform, old)).is_admin
    platform.settings.admin_token = SecretStr(token)
    await bootstrap_admin(platform)
    assert (await authenticate(platform, token)).is_admin
    with pytest.raises(Unauthorized, match="Invalid bearer token"):
        await authenticate(platform, old)


async def test_requests_at_once_with_a_new_token_share_one_lookup(platform: Platform) -> None:
    """A new owner starting hundreds of runs at once: one query, every request answered;
    a request cancelled meanwhile leaves the lookup to the others."""
    owner, token = await create_owner(platform, "Ada")
    queries = []

    def counted(*args: object) -> None:
        queries.append(args[2])

    event.listen(platform.db.engine.sync_engine, "before_cursor_execute", counted)
    try:
        cancelled = asyncio.create_task(authenticate(platform, token))
        others = [asyncio.create_task(authenticate(platform, token)) for _ in range(50)]
        invalid = [asyncio.create_task(authenticate(platform, token + "x")) for _ in range(5)]
        await asyncio.sleep(0)
        cancelled.cancel()
        callers = await asyncio.gather(*others)
        refused = await asyncio.gather(*invalid, return_exceptions=True)
    finally:
        event.remove(platform.db.engine.sync_engine, "before_cursor_execute", counted)
    assert {caller.owner_id for caller in callers} == {owner.id}
    assert all(isinstance(error, Unauthorized) for error in refused)
    assert len(queries) == 2  # the token's, and the invalid one's
