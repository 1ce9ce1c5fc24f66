"""The address the guessing throttle counts, and the start-up warning about a weak admin token."""

from __future__ import annotations

import asyncio
import collections
import ipaddress
from typing import Any

import pytest
from pydantic import SecretStr

from palaestra.errors import ConfigurationError
from palaestra.settings import Settings
from palaestra.throttle import Throttle, client_address

PROXIES = (ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("::1/128"))


@pytest.mark.parametrize(
    ("peer", "forwarded", "counted"),
    [
        # No proxy trusted for this peer: the header is the client's word, ignored.
        ("203.0.113.7", "198.51.100.1", "203.0.113.7"),
        ("203.0.113.7", None, "203.0.113.7"),
        # A trusted proxy: the nearest address it was given that is not a proxy.
        ("10.0.0.2", "198.51.100.1", "198.51.100.1"),
        ("10.0.0.2", "198.51.100.1, 10.0.0.9", "198.51.100.1"),
        # The client may prepend anything; only what our proxy appended counts.
        ("10.0.0.2", "1.2.3.4, 198.51.100.1", "198.51.100.1"),
        ("::1", "2001:db8::5", "2001:db8::5"),
        # Only proxies in the list: the farthest one.
        ("10.0.0.2", "10.0.0.3, 10.0.0.4", "10.0.0.3"),
        # Garbage in the list: the proxy's own address, never a made-up one.
        ("10.0.0.2", "not-an-address", "10.0.0.2"),
        ("10.0.0.2", "", "10.0.0.2"),
        (None, "198.51.100.1", "unknown"),
    ],
)
def test_the_counted_address(peer: str | None, forwarded: str | None, counted: str) -> None:
    assert client_address(peer, forwarded, PROXIES) == counted


def test_nothing_is_trusted_by_default() -> None:
    assert client_address("127.0.0.1", "198.51.100.1", ()) == "127.0.0.1"


def test_a_bad_proxy_range_or_storage_url_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="FORWARDED_ALLOW_IPS"):
        Throttle(limit=1, window_s=1, forwarded_allow=["10.0.0.0/33"])
    with pytest.raises(ConfigurationError, match="AUTH_THROTTLE_URL"):
        Throttle(limit=1, window_s=1, storage_url="mysql://db")


async def test_the_limit_and_its_retry_after() -> None:
    from palaestra.errors import TooManyRequests

    throttle = Throttle(limit=3, window_s=60)
    for _ in range(3):
        await throttle.check("192.0.2.1")
        await throttle.failed("192.0.2.1")
    with pytest.raises(TooManyRequests) as refused:
        await throttle.check("192.0.2.1")
    assert 1 <= refused.value.retry_after <= 60
    await throttle.check("192.0.2.2")  # another address is not held back


async def test_a_limit_of_zero_is_unlimited() -> None:
    throttle = Throttle(limit=0, window_s=60)
    for _ in range(50):
        await throttle.failed("192.0.2.1")
    await throttle.check("192.0.2.1")


def settings(token: str | None) -> Settings:
    return Settings(_env_file=None, admin_token=None if token is None else SecretStr(token))


@pytest.mark.parametrize("token", ["admintok", "x" * 31])
def test_a_short_admin_token_is_warned_about_without_showing_it(token: str) -> None:
    (warning,) = settings(token).startup_warnings()
    assert f"is {len(token)} characters long" in warning
    assert token not in warning


@pytest.mark.parametrize("token", [None, "x" * 32, "pa_admin_" + "a" * 40])
def test_a_long_or_generated_admin_token_is_not(token: str | None) -> None:
    assert settings(token).startup_warnings() == []


async def test_a_target_is_limited_across_addresses() -> None:
    from palaestra.errors import TooManyRequests

    throttle = Throttle(limit=10, window_s=60, target_limit=3)
    for n in range(3):
        await throttle.check(f"192.0.2.{n}", "fighter:f1")
        await throttle.failed(f"192.0.2.{n}", "fighter:f1")
    with pytest.raises(TooManyRequests, match="for this credential"):
        await throttle.check("192.0.2.99", "fighter:f1")
    await throttle.check("192.0.2.99", "fighter:f2")  # another target is not held back
    await throttle.check("192.0.2.99")  # nor the address, for credentials naming no target


async def test_a_target_limit_of_zero_is_unlimited() -> None:
    throttle = Throttle(limit=0, window_s=60, target_limit=0)
    for n in range(20):
        await throttle.failed(f"192.0.2.{n}", "agent:a1")
    await throttle.check("192.0.2.1", "agent:a1")


async def burst(throttle: Throttle, count: int, *, right: bool, target: str | None = None) -> Any:
    """``count`` credentials checked at once from one address; what each came to, and the
    most lookups in flight together."""
    from palaestra.errors import InvalidCredential, TooManyRequests

    inside = most = 0

    async def one(n: int) -> str:
        nonlocal inside, most
        try:
            async with throttle.attempt("192.0.2.1", target) as attempt:
                inside += 1
                most = max(most, inside)
                await asyncio.sleep(0.001 * (n % 7))  # lookups of uneven length, interleaved
                inside -= 1
                if right:
                    return "right"
                try:
                    raise InvalidCredential("wrong")
                except InvalidCredential:
                    await attempt.failed()
                    return "wrong"
        except TooManyRequests:
            return "refused"

    outcomes = await asyncio.gather(*(one(n) for n in range(count)))
    return collections.Counter(outcomes), most


async def test_wrong_credentials_checked_at_once_spend_at_most_the_limit() -> None:
    throttle = Throttle(limit=5, window_s=60)
    outcomes, most = await burst(throttle, 200, right=False)
    assert outcomes == {"wrong": 5, "refused": 195}
    assert most <= 5
    assert throttle._slots == {}  # nothing left behind


async def test_right_credentials_checked_at_once_wait_for_a_slot_and_all_pass() -> None:
    throttle = Throttle(limit=3, window_s=60)
    outcomes, most = await burst(throttle, 200, right=True)
    assert outcomes == {"right": 200}
    assert most == 3
    assert throttle._slots == {}


async def test_slots_shrink_as_failures_are_spent() -> None:
    throttle = Throttle(limit=4, window_s=60)
    for _ in range(3):
        await throttle.failed("192.0.2.1")
    outcomes, most = await burst(throttle, 50, right=True)
    assert outcomes == {"right": 50}
    assert most == 1  # one failure left: one lookup at a time


async def test_a_target_checked_at_once_spends_at_most_its_limit() -> None:
    throttle = Throttle(limit=0, window_s=60, target_limit=3)
    outcomes, _ = await burst(throttle, 100, right=False, target="agent:a1")
    assert outcomes == {"wrong": 3, "refused": 97}
    assert throttle._slots == {}


async def test_an_attempt_cancelled_while_leaving_still_gives_its_slot_back() -> None:
    throttle = Throttle(limit=2, window_s=60)
    inside = asyncio.Event()

    async def hung() -> None:
        async with throttle.attempt("192.0.2.1"):
            inside.set()
            await asyncio.Event().wait()

    first = asyncio.create_task(hung())
    await inside.wait()
    slots = throttle._slots[("auth-failures", "192.0.2.1")]
    async with slots.changed:  # the way out is busy: the cancelled attempt waits there
        first.cancel()
        await asyncio.sleep(0)
        first.cancel()  # and is cancelled again while it waits
        await asyncio.sleep(0)
    await asyncio.gather(first, return_exceptions=True)
    await asyncio.sleep(0)
    assert throttle._slots == {}
