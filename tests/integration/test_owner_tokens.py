"""Owners' tokens rotated and revoked: through the API, the web form and the command line.

A token that was rotated or revoked stops working at once in the process that changed
it, although it was remembered there; in another process on the same database within
``owner_token_cache_s``. New tokens are shown once and stored only as their hash.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import structlog
from sqlalchemy import select
from structlog.testing import capture_logs
from typer.testing import CliRunner

from palaestra.cli import app as cli
from palaestra.clock import FrozenClock
from palaestra.engine import accounts
from palaestra.engine.accounts import Caller, authenticate, create_owner
from palaestra.errors import Unauthorized
from palaestra.platform import Platform
from palaestra.settings import Settings
from palaestra.store.models import Owner
from tests.integration.platform_fixtures import ADMIN_TOKEN, Api, reset_postgres, running
from tests.integration.web_support import page, post_form

#: An owner's request: its own agents (empty here, but 200 only with a working token).
MINE = "/api/agents"


async def works(api: Api, token: str) -> int:
    return (await api.call("GET", MINE, token=token))[0]


async def owner_id_of(platform: Platform, token: str) -> str:
    caller = await authenticate(platform, token)
    assert caller.owner_id is not None
    return caller.owner_id


async def stored(platform: Platform, owner_id: str) -> Owner:
    async with platform.db.session() as session:
        owner = await session.scalar(select(Owner).where(Owner.id == owner_id))
    assert owner is not None
    return owner


def sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@pytest.mark.asyncio
async def test_an_owner_rotates_its_token_and_the_old_one_stops_at_once(
    platform: Platform, clock: FrozenClock
) -> None:
    async with running(platform) as api:
        old = await api.owner("alice")
        alice = await owner_id_of(platform, old)
        assert await works(api, old) == 200  # remembered by this process from now on
        with capture_logs() as logs:
            status, body = await api.call("POST", f"/api/owners/{alice}/rotate-token", token=old)
        assert status == 200, body
        assert set(body) == {"owner_id", "token", "rotated_at"}
        new = body["token"]
        assert (body["owner_id"], body["rotated_at"]) == (alice, clock.now())
        assert new.startswith("pa_owner_")
        assert new != old
        assert await works(api, old) == 401
        assert await works(api, new) == 200
        # Shown once: only its hash is stored, and no log line carries either token.
        row = await stored(platform, alice)
        assert (row.token_hash, row.token_rotated_at, row.token_revoked_at) == (
            sha256(new),
            clock.now(),
            None,
        )
        assert [entry["event"] for entry in logs] == ["owner token rotated"]
        assert logs[0]["owner_id"] == alice
        assert logs[0]["by"] == "owner"
        assert new not in repr(logs)
        assert old not in repr(logs)
        # Rotating again: the second token gives way to a third.
        status, again = await api.call("POST", f"/api/owners/{alice}/rotate-token", token=new)
        assert status == 200
        assert await works(api, new) == 401
        assert await works(api, again["token"]) == 200


@pytest.mark.asyncio
async def test_revoked_by_the_admin_or_the_owner_and_reissued_only_by_the_admin(
    platform: Platform, clock: FrozenClock
) -> None:
    async with running(platform) as api:
        token = await api.owner("alice")
        alice = await owner_id_of(platform, token)
        assert await works(api, token) == 200
        revoke = f"/api/owners/{alice}/revoke-token"
        status, body = await api.call("POST", revoke, token=ADMIN_TOKEN)
        assert (status, body) == (200, {"owner_id": alice, "revoked_at": clock.now()})
        assert await works(api, token) == 401
        assert (await api.call("POST", f"/api/owners/{alice}/rotate-token", token=token))[0] == 401
        clock.advance(10)
        assert (await api.call("POST", revoke, token=ADMIN_TOKEN))[1]["revoked_at"] == (
            clock.now() - 10  # revoking twice changes nothing
        )
        # The admin issues a new one: it works, the revoked one still does not.
        status, body = await api.call(
            "POST", f"/api/owners/{alice}/rotate-token", token=ADMIN_TOKEN
        )
        assert status == 200
        assert await works(api, body["token"]) == 200
        assert await works(api, token) == 401
        assert (await stored(platform, alice)).token_revoked_at is None
        # The owner revokes its own.
        status, _ = await api.call("POST", revoke, token=body["token"])
        assert status == 200
        assert await works(api, body["token"]) == 401


@pytest.mark.asyncio
async def test_an_owner_acts_only_on_its_own_token(platform: Platform) -> None:
    async with running(platform) as api:
        alice, bob = await api.owner("alice"), await api.owner("bob")
        bobs = await owner_id_of(platform, bob)
        for action, verb in (("rotate-token", "rotates"), ("revoke-token", "revokes")):
            for target in (bobs, "no-such-owner"):  # another's, or none: the same answer
                status, body = await api.call("POST", f"/api/owners/{target}/{action}", token=alice)
                assert (status, body) == (
                    403,
                    {"error": f"an owner {verb} only its own token", "code": "forbidden"},
                )
            status, body = await api.call(
                "POST", f"/api/owners/no-such-owner/{action}", token=ADMIN_TOKEN
            )
            assert (status, body) == (
                404,
                {"error": "Owner no-such-owner not found", "code": "not-found"},
            )
            assert (await api.call("POST", f"/api/owners/{bobs}/{action}"))[0] == 401
        assert await works(api, bob) == 200


@pytest.mark.asyncio
async def test_another_process_stops_taking_the_old_token_within_the_cache_time(
    platform: Platform, settings: Settings, clock: FrozenClock
) -> None:
    """Scaled out, each API process remembers tokens for ``owner_token_cache_s``: a
    rotation in one is seen by the others within that time, never later."""
    other = await Platform.open(settings, clock=clock, migrate=False)
    try:
        owner, token = await create_owner(platform, "alice")
        assert (await authenticate(other, token)).owner_id == owner.id  # remembered there
        async with running(platform) as api:
            status, body = await api.call(
                "POST", f"/api/owners/{owner.id}/rotate-token", token=token
            )
            assert status == 200
        with pytest.raises(Unauthorized):
            await authenticate(platform, token)  # here: at once
        clock.advance(settings.owner_token_cache_s - 0.1)
        assert (await authenticate(other, token)).owner_id == owner.id  # within the bound
        clock.advance(0.1)
        with pytest.raises(Unauthorized):
            await authenticate(other, token)  # past it: refused
        assert (await authenticate(other, body["token"])).owner_id == owner.id
    finally:
        await other.close()


@pytest.mark.asyncio
async def test_a_lookup_under_way_when_the_token_is_rotated_is_not_remembered(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Requests at once with a token not yet remembered share one lookup. One that read
    the store before a rotation answers the requests that were waiting on it, but is not
    remembered, and a request that comes after the rotation does not wait on it."""
    owner, token = await create_owner(platform, "alice")
    lookup = accounts._admin_and_owner
    read, release = asyncio.Event(), asyncio.Event()

    async def read_then_wait(*args: Any) -> Any:
        found = await lookup(*args)
        read.set()
        await release.wait()
        return found

    monkeypatch.setattr(accounts, "_admin_and_owner", read_then_wait)
    early = [asyncio.create_task(authenticate(platform, token)) for _ in range(20)]
    await read.wait()  # the store was read: the token was still alice's
    await accounts.rotate_owner_token(platform, Caller(owner_id=None, is_admin=True), owner.id)
    late = asyncio.create_task(authenticate(platform, token))
    await asyncio.sleep(0.05)
    release.set()
    assert {caller.owner_id for caller in await asyncio.gather(*early)} == {owner.id}
    with pytest.raises(Unauthorized):
        await late
    monkeypatch.undo()
    with pytest.raises(Unauthorized):
        await authenticate(platform, token)


@pytest.mark.asyncio
async def test_the_web_form_rotates_and_revokes_with_the_token_shown_once(
    platform: Platform,
) -> None:
    async with running(platform) as api:
        token = await api.owner("alice")
        alice = await owner_id_of(platform, token)
        status, shown = await page(api, "/owner/token")
        assert status == 200
        assert 'action="/owner/token/rotate"' in shown
        assert 'action="/owner/token/revoke"' in shown
        # From another site, or with a wrong token: refused, nothing changed.
        status, body, _ = await post_form(
            api, "/owner/token/rotate", {"token": token}, headers={"Origin": "https://evil.test"}
        )
        assert (status, "another site" in body) == (403, True)
        assert (await post_form(api, "/owner/token/rotate", {"token": "wrong"}))[0] == 401
        assert await works(api, token) == 200
        # Rotated: the new token on a page no one stores, the old one refused.
        status, body, headers = await post_form(api, "/owner/token/rotate", {"token": token})
        assert (status, headers["Cache-Control"]) == (200, "no-store")
        new = (await stored(platform, alice), body)
        assert sha256(token) != new[0].token_hash
        shown_tokens = [t for t in body.split() if t.startswith('id="new-token">pa_owner_')]
        assert len(shown_tokens) == 1
        fresh = shown_tokens[0].removeprefix('id="new-token">').split("<")[0]
        assert sha256(fresh) == new[0].token_hash
        assert await works(api, token) == 401
        assert await works(api, fresh) == 200
        # Revoking asks for the box to be ticked.
        status, body, _ = await post_form(api, "/owner/token/revoke", {"token": fresh})
        assert status == 400
        assert "tick the box" in body
        assert await works(api, fresh) == 200
        status, body, _ = await post_form(
            api, "/owner/token/revoke", {"token": fresh, "confirm": "yes"}
        )
        assert status == 200
        assert "no longer works" in body
        assert await works(api, fresh) == 401
        # The admin names the owner; without one, a clear refusal.
        status, body, _ = await post_form(api, "/owner/token/rotate", {"token": ADMIN_TOKEN})
        assert status == 400
        assert "the admin names the owner" in body
        status, body, _ = await post_form(
            api, "/owner/token/rotate", {"token": ADMIN_TOKEN, "owner_id": alice}
        )
        assert status == 200
        assert 'id="new-token">pa_owner_' in body


def test_the_command_line_rotates_and_revokes_as_the_admin(settings: Settings) -> None:
    """The CLI acts on the database through the same services (no server needed)."""
    if settings.database_url and settings.database_url.startswith("postgresql"):
        asyncio.run(reset_postgres(settings.database_url))

    async def prepare() -> tuple[str, str]:
        platform = await Platform.open(settings)
        try:
            owner, token = await create_owner(platform, "alice")
            return owner.id, token
        finally:
            await platform.close()

    async def opens(token: str) -> str | None:
        platform = await Platform.open(settings, migrate=False)
        try:
            return (await authenticate(platform, token)).owner_id
        except Unauthorized:
            return None
        finally:
            await platform.close()

    owner_id, token = asyncio.run(prepare())
    secret = settings.secret_key
    assert secret is not None
    env: dict[str, Any] = {
        "PALAESTRA_DATA_DIR": str(settings.data_dir),
        "PALAESTRA_DATABASE_URL": settings.database_url,
        "PALAESTRA_SECRET_KEY": secret.get_secret_value(),
        "PALAESTRA_ADMIN_TOKEN": ADMIN_TOKEN,
    }
    runner = CliRunner(env=env)
    logging_as_it_was = structlog.get_config()  # the command configures its own
    try:
        _run_the_commands(runner, owner_id, token, opens)
    finally:
        structlog.configure(**logging_as_it_was)


def _run_the_commands(
    runner: CliRunner,
    owner_id: str,
    token: str,
    opens: Callable[[str], Coroutine[Any, Any, str | None]],
) -> None:
    rotated = runner.invoke(cli, ["owner", "rotate-token", owner_id])
    assert rotated.exit_code == 0, rotated.output
    # The token alone on standard output (for a script), the words on standard error.
    (new,) = [line for line in rotated.stdout.splitlines() if "pa_owner_" in line]
    assert new.startswith("pa_owner_")
    assert f"New token for owner {owner_id} (shown once, keep it safe):" in rotated.stderr
    assert "within 5 s" in rotated.stderr
    assert asyncio.run(opens(token)) is None
    assert asyncio.run(opens(new)) == owner_id

    revoked = runner.invoke(cli, ["owner", "revoke-token", owner_id])
    assert revoked.exit_code == 0
    assert f"Token of owner {owner_id} revoked." in revoked.stdout
    assert asyncio.run(opens(new)) is None

    missing = runner.invoke(cli, ["owner", "rotate-token", "no-such-owner"])
    assert missing.exit_code == 1
    assert "error: Owner no-such-owner not found" in missing.stderr


@pytest.mark.asyncio
async def test_wrong_tokens_on_the_token_page_count_against_the_throttle(
    platform: Platform,
) -> None:
    platform.settings.auth_throttle_failures = 3
    async with running(platform) as api:
        token = await api.owner("alice")
        statuses = [
            (await post_form(api, f"/owner/token/{action}", {"token": f"guess{n}"}))[0]
            for n, action in enumerate(("rotate", "revoke", "rotate", "rotate"))
        ]
        assert statuses == [401, 401, 401, 429]
        # Held back, right token included: nothing rotated.
        assert (await post_form(api, "/owner/token/rotate", {"token": token}))[0] == 429
    assert (await authenticate(platform, token)).owner_id is not None
