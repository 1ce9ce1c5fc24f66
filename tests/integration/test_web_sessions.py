"""Signing in once: a token exchanged for a server-side session, its cookie, its form token
(CSRF), its end (expiry, sign-out, a rotated or revoked token) and the private runs it opens.
"""

from __future__ import annotations

import hashlib
import re

import pytest
from pydantic import SecretStr
from sqlalchemy import select
from structlog.testing import capture_logs

from palaestra.clock import FrozenClock
from palaestra.engine.accounts import bootstrap_admin
from palaestra.platform import Platform
from palaestra.store.models import WebSession
from tests.integration.arena_rows import add_fighter, add_run
from tests.integration.browser_support import COOKIE, browser, hidden, owner_of, set_cookie
from tests.integration.platform_fixtures import ADMIN_TOKEN, running
from tests.integration.run_support import add_agent as add_run_agent
from tests.integration.test_reasons_shown import failing_agent
from tests.integration.web_support import HTML


async def stored_sessions(platform: Platform) -> list[WebSession]:
    async with platform.db.session() as session:
        return list(await session.scalars(select(WebSession)))


@pytest.mark.asyncio
async def test_signing_in_keeps_only_the_ids_hash_and_sets_a_cookie_no_script_reads(
    platform: Platform, clock: FrozenClock
) -> None:
    async with running(platform) as api, browser(api) as alice:
        token = await api.owner("alice")
        status, _, headers = await alice.get("/")
        assert status == 200
        with capture_logs() as logs:
            status, _, headers = await alice.sign_in(token, then="/agents")
        assert (status, headers["Location"]) == (303, "/agents")
        cookie = set_cookie(headers, COOKIE)[COOKIE]
        assert cookie["httponly"] is True
        assert cookie["samesite"] == "lax"
        assert not cookie["secure"]  # the public URL is http here
        assert (cookie["path"], cookie["max-age"]) == ("/", str(43_200))
        session_id = cookie.value
        assert len(session_id) >= 43  # 256 bits
        [row] = await stored_sessions(platform)
        assert row.id_hash == hashlib.sha256(session_id.encode()).hexdigest()
        assert (row.owner_id, row.expires_at) == (
            await owner_of(platform, token),
            clock.now() + 43_200,
        )
        assert [entry["event"] for entry in logs] == ["signed in"]
        assert session_id not in repr(logs)
        assert token not in repr(logs)
        # Every page says who is signed in, and is not stored by a cache.
        for path in ("/", "/agents", "/leaderboard", "/nowhere"):
            status, body, headers = await alice.get(path)
            assert 'Signed in as <strong id="signed-in-as">alice</strong>' in body, path
            assert headers["Cache-Control"] == "no-store"
        # An anonymous browser sees none of it.
        async with browser(api) as anyone:
            _, body, headers = await anyone.get("/")
            assert "Signed in as" not in body
            assert 'id="sign-in"' in body
            assert "Cache-Control" not in headers


@pytest.mark.asyncio
async def test_a_wrong_token_or_a_form_from_elsewhere_signs_no_one_in(platform: Platform) -> None:
    async with running(platform) as api, browser(api) as visitor:
        token = await api.owner("alice")
        status, body, headers = await visitor.sign_in("pa_owner_guess")
        assert status == 401
        assert "Invalid bearer token" in body
        assert visitor.cookie() is None
        # Login CSRF: a form without the page's own guard value (another site's) is refused.
        status, body, _ = await visitor.post("/signin", {"token": token, "csrf_token": "x"})
        assert status == 403
        assert "not sent from this page" in body
        status, body, _ = await visitor.post(
            "/signin", {"token": token}, origin="https://evil.test"
        )
        assert status == 403
        assert "another site" in body
        assert visitor.cookie() is None
        assert await stored_sessions(platform) == []
        # Never back to another site after signing in.
        status, _, headers = await visitor.sign_in(token, then="//evil.test/x")
        assert (status, headers["Location"]) == (303, "/")


@pytest.mark.asyncio
async def test_an_https_arena_marks_its_cookie_secure_and_host_only(platform: Platform) -> None:
    async with running(platform) as api, browser(api) as alice:
        platform.settings.public_url = "https://arena.test"
        token = await api.owner("alice")
        _, page, headers = await alice.get("/signin")
        guard = set_cookie(headers, "palaestra_signin")["palaestra_signin"]
        assert guard["secure"] is True
        assert guard["samesite"] == "strict"
        # Over http the client keeps Secure cookies to itself: send it as a browser on https would.
        form = {"token": token, "csrf_token": hidden(page, "csrf_token")}
        async with alice.session.post(
            api.base + "/signin",
            data=form,
            headers={
                **HTML,
                "Origin": "https://arena.test",
                "Cookie": f"palaestra_signin={guard.value}",
            },
            allow_redirects=False,
        ) as response:
            status, headers = response.status, response.headers
        assert status == 303
        cookie = set_cookie(headers, "__Host-palaestra_session")["__Host-palaestra_session"]
        assert cookie["secure"] is True
        assert cookie["httponly"] is True
        assert cookie["samesite"] == "lax"
        assert cookie["path"] == "/"


@pytest.mark.asyncio
async def test_a_session_expires_and_sign_out_ends_it_everywhere(
    platform: Platform, clock: FrozenClock
) -> None:
    platform.settings.web_session_s = 600
    async with running(platform) as api, browser(api) as alice:
        token = await api.owner("alice")
        assert (await alice.sign_in(token))[0] == 303
        clock.advance(599)
        assert "Signed in as" in (await alice.get("/"))[1]
        clock.advance(2)
        _, body, _ = await alice.get("/")
        assert "Signed in as" not in body
        _, page, _ = await alice.get("/owner/token")
        assert 'name="token"' in page  # the form asks for the token again
        status, body, _ = await alice.post("/owner/token/revoke", {"csrf_token": "x"})
        assert status == 401
        assert "Your session has ended" in body
        # Signed in again; signing out deletes the row, and the old id opens nothing.
        await alice.sign_in(token)
        session_id = alice.cookie()
        assert session_id is not None
        _, page, _ = await alice.get("/")
        status, body, _ = await alice.post("/signout", {"csrf_token": "wrong"})
        assert status == 403
        assert "Form token missing or wrong" in body
        status, _, headers = await alice.post(
            "/signout", {"csrf_token": hidden(page, "csrf_token")}
        )
        assert (status, headers["Location"]) == (303, "/")
        assert set_cookie(headers, COOKIE)[COOKIE]["max-age"] == "0"
        assert await stored_sessions(platform) == []
        alice.session.cookie_jar.update_cookies({COOKIE: session_id})
        assert "Signed in as" not in (await alice.get("/"))[1]


@pytest.mark.asyncio
async def test_rotating_or_revoking_the_token_ends_the_owners_sessions_only(
    platform: Platform,
) -> None:
    async with running(platform) as api, browser(api) as alice, browser(api) as bob:
        alice_token, bob_token = await api.owner("alice"), await api.owner("bob")
        alice_id = await owner_of(platform, alice_token)
        await alice.sign_in(alice_token)
        await bob.sign_in(bob_token)
        # Through the API: the admin rotates alice's token.
        status, _ = await api.call(
            "POST", f"/api/owners/{alice_id}/rotate-token", token=ADMIN_TOKEN
        )
        assert status == 200
        assert "Signed in as" not in (await alice.get("/"))[1]
        assert "Signed in as <strong" in (await bob.get("/"))[1]
        # From the browser, with the session alone: bob rotates his own and is signed out.
        _, page, _ = await bob.get("/owner/token")
        assert 'name="token"' not in page
        status, body, headers = await bob.post(
            "/owner/token/rotate", {"csrf_token": hidden(page, "csrf_token")}
        )
        assert status == 200
        assert 'id="new-token"' in body
        assert "Signed in as" not in body
        assert "sign in again with the new one" in body
        assert set_cookie(headers, COOKIE)[COOKIE]["max-age"] == "0"
        assert await stored_sessions(platform) == []
        # Revoked: signing in with it fails, and sessions already open end.
        new_bob = re.search(r'id="new-token">([^<]+)<', body)
        assert new_bob is not None
        await bob.sign_in(new_bob.group(1))
        assert "Signed in as <strong" in (await bob.get("/"))[1]
        bob_id = await owner_of(platform, new_bob.group(1))
        await api.call("POST", f"/api/owners/{bob_id}/revoke-token", token=ADMIN_TOKEN)
        assert "Signed in as" not in (await bob.get("/"))[1]
        assert (await bob.sign_in(new_bob.group(1)))[0] == 401


@pytest.mark.asyncio
async def test_forms_with_a_session_need_its_form_token_and_no_owner_token(
    platform: Platform,
) -> None:
    async with running(platform) as api, browser(api) as alice:
        token = await api.owner("alice")
        fighter = await add_fighter(platform, await owner_of(platform, token), "brawler")
        action = f"/fighters/{fighter}/rated-challenges"
        await alice.sign_in(token)
        _, page, _ = await alice.get(f"/fighters/{fighter}")
        assert 'type="password" name="token"' not in page
        assert 'name="token"' not in page
        form_token = hidden(page, "csrf_token")
        wrong = form_token[:-1] + ("1" if form_token.endswith("0") else "0")
        for sent in ({"accepts": "yes"}, {"accepts": "yes", "csrf_token": wrong}):
            status, body, _ = await alice.post(action, sent)
            assert status == 403, sent
            assert "Form token missing or wrong" in body
            assert "Reload the page" in body
        status, body, _ = await alice.post(
            action, {"accepts": "yes", "csrf_token": form_token}, origin="https://evil.test"
        )
        assert status == 403
        assert "another site" in body
        assert 'id="rated-challenges">no:' in (await alice.get(f"/fighters/{fighter}"))[1]
        status, _, headers = await alice.post(action, {"accepts": "yes", "csrf_token": form_token})
        assert (status, headers["Location"]) == (303, f"/fighters/{fighter}#rated-challenges")
        assert 'id="rated-challenges">accepted' in (await alice.get(f"/fighters/{fighter}"))[1]
        # Another browser's form token is not this session's.
        async with browser(api) as other:
            await other.sign_in(token)
            _, page, _ = await other.get(f"/fighters/{fighter}")
            assert hidden(page, "csrf_token") != form_token
            status, _, _ = await other.post(action, {"accepts": "no", "csrf_token": form_token})
            assert status == 403
        # Not signed in: the token field is back, and the token works as before.
        async with browser(api) as anyone:
            _, page, _ = await anyone.get(f"/fighters/{fighter}")
            assert 'name="token"' in page
            status, body, _ = await anyone.post(action, {"accepts": "no"})
            assert status == 401
            assert "Sign in" in body
            assert (await anyone.post(action, {"accepts": "no", "token": token}))[0] == 303


@pytest.mark.asyncio
async def test_signed_in_owners_read_their_own_private_runs(platform: Platform) -> None:
    platform.settings.public_runs = False
    platform.settings.runs_enabled = False
    async with running(platform) as api:
        alice_token, bob_token = await api.owner("alice"), await api.owner("bob")
        alice_id, bob_id = (
            await owner_of(platform, alice_token),
            await owner_of(platform, bob_token),
        )
        mine = await add_run(platform, [], goal="Alice's goal", owner_id=alice_id)
        theirs = await add_run(platform, [], goal="Bob's goal", owner_id=bob_id)
        async with browser(api) as anyone:
            for path in ("/runs", f"/runs/{mine}"):
                status, body, _ = await anyone.get(path)
                assert status == 403
                assert "Runs are private" in body
        async with browser(api) as alice:
            await alice.sign_in(alice_token)
            status, body, _ = await alice.get("/runs")
            assert status == 200
            assert "Alice&#39;s goal" in body
            assert "Bob&#39;s goal" not in body
            assert 'href="/runs/new" id="start-run"' in body
            assert (await alice.get(f"/runs/{mine}"))[0] == 200
            assert (await alice.get(f"/runs/{theirs}"))[0] == 404
        async with browser(api) as admin:
            await admin.sign_in(ADMIN_TOKEN)
            status, body, _ = await admin.get("/runs")
            assert "Signed in as <strong" in body
            assert ">admin</strong>" in body
            assert "Alice&#39;s goal" in body
            assert "Bob&#39;s goal" in body
            assert (await admin.get(f"/runs/{theirs}"))[0] == 200


@pytest.mark.asyncio
async def test_signed_in_the_owner_reads_its_agents_whole_reasons_with_no_form(
    platform: Platform,
) -> None:
    async with running(platform) as api:
        agent_id, token = await failing_agent(platform)
        mallory = await api.owner("mallory")
        for credential, owner in ((token, True), (ADMIN_TOKEN, True), (mallory, False)):
            async with browser(api) as visitor:
                await visitor.sign_in(credential)
                status, body, _ = await visitor.get(f"/agents/{agent_id}")
                assert status == 200
                assert ('data-audience="owner"' in body) is owner
                assert ("@db.internal:5432/prod" in body) is owner  # redacted, but whole
                assert "hunter2" not in body
                # The owner sees no form asking for the token; the others' form carries none.
                assert 'name="token"' not in body


@pytest.mark.asyncio
async def test_a_new_admin_token_ends_the_admins_sessions(platform: Platform) -> None:
    async with running(platform) as api, browser(api) as admin, browser(api) as alice:
        await admin.sign_in(ADMIN_TOKEN)
        await alice.sign_in(await api.owner("alice"))
        platform.settings.admin_token = SecretStr("pa_admin_" + "n" * 40)
        await bootstrap_admin(platform)  # as a server starting with the new token does
        assert "Signed in as" not in (await admin.get("/"))[1]
        assert "Signed in as <strong" in (await alice.get("/"))[1]
        assert (await admin.sign_in(ADMIN_TOKEN))[0] == 401


@pytest.mark.asyncio
async def test_the_wizard_starts_with_the_session_and_its_panel_follows_without_the_token(
    platform: Platform,
) -> None:
    async with running(platform) as api, browser(api) as alice:
        token = await api.owner("alice")
        owner_id = await owner_of(platform, token)
        agent_id = await add_run_agent(platform, owner_id, "s", "SCOUT", "https://a.invalid/", "k")
        await alice.sign_in(token)
        _, page, _ = await alice.get(f"/agents/{agent_id}")
        form = {"csrf_token": hidden(page, "csrf_token")}
        async with alice.session.post(
            f"{api.base}/agents/{agent_id}/wizard",
            data=form,
            headers={**HTML, "Origin": api.base, "HX-Request": "true"},
        ) as response:
            status, panel = response.status, await response.text()
        assert status == 200
        assert f'hx-get="/agents/{agent_id}/wizard/' in panel  # polled with the cookie alone
        assert token not in panel
        assert "hx-vals" not in panel


@pytest.mark.asyncio
async def test_signing_in_again_ends_the_session_it_replaces(platform: Platform) -> None:
    async with running(platform) as api, browser(api) as visitor:
        await visitor.sign_in(await api.owner("alice"))
        first = visitor.cookie()
        await visitor.sign_in(await api.owner("bob"))
        assert visitor.cookie() != first
        [row] = await stored_sessions(platform)
        assert row.id_hash == hashlib.sha256(str(visitor.cookie()).encode()).hexdigest()
        assert ">bob</strong>" in (await visitor.get("/"))[1]
