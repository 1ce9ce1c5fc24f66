"""The admin token: configured, or generated once and shown once."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

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
    assert platform.owner_tokens.owner(hash_token(token)) == owner.id  # no query the next time
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
