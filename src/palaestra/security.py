"""Tokens, keys and their storage: hashed when only checked, encrypted when needed again."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable
from functools import partial

from cryptography.fernet import Fernet, InvalidToken

from palaestra.errors import ConfigurationError

__all__ = ["KeyVault", "OwnerTokens", "hash_token", "new_token", "token_matches"]

#: What the store says of a token hash: the admin token's hash, and the owner it names.
Holders = tuple[str | None, str | None]


def new_token(prefix: str) -> str:
    """A fresh random token (256 bits), with a prefix that says what it is."""
    return f"{prefix}_{secrets.token_urlsafe(32)}"


def hash_token(token: str) -> str:
    """The stored form of a bearer token. Tokens are random, so a plain SHA-256 suffices."""
    return hashlib.sha256(token.encode()).hexdigest()


def token_matches(token: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_token(token), stored_hash)


class KeyVault:
    """Encrypts agent keys at rest; the platform decrypts them to sign dispatches.

    Opened keys are remembered (by their sealed form, which a new key or a rotation
    changes), so that signing thousands of dispatches to the same agents does not
    decrypt the same key again each time.
    """

    _REMEMBERED = 10_000

    def __init__(self, secret_key: str) -> None:
        try:
            self._fernet = Fernet(secret_key.encode())
        except (ValueError, TypeError) as exc:
            raise ConfigurationError(
                "the secret key must be 32 url-safe base64-encoded bytes (a Fernet key)"
            ) from exc
        self._opened: dict[str, str] = {}

    def seal(self, plaintext: str) -> str:
        return self._fernet.encrypt(plaintext.encode()).decode()

    def open(self, sealed: str) -> str:
        opened = self._opened.get(sealed)
        if opened is not None:
            return opened
        try:
            opened = self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken as exc:
            raise ConfigurationError(
                "an agent key cannot be decrypted: the secret key changed"
            ) from exc
        if len(self._opened) >= self._REMEMBERED:
            self._opened.clear()
        self._opened[sealed] = opened
        return opened


class OwnerTokens:
    """The owners whose tokens were seen, by the token's hash, each for ``ttl_s`` seconds:
    every API request authenticates, and within that time a remembered token needs no
    query. A token hash that is not remembered is looked up in the store. Whatever changes
    which owner or admin a token stands for here (a token rotated or revoked, a new admin
    token) forgets them all at once (:meth:`forget`), and a lookup under way then is not
    remembered; a change made by another process is seen here within ``ttl_s``. Bounded:
    past ``limit`` hashes, the oldest half is forgotten."""

    def __init__(self, limit: int = 10_000, ttl_s: float = 5.0) -> None:
        self._limit = limit
        self._ttl_s = ttl_s
        #: token hash -> (owner id, remembered until: the clock's monotonic seconds)
        self._owners: dict[str, tuple[str, float]] = {}
        self._lookups: dict[str, asyncio.Future[Holders]] = {}
        self._generation = 0

    def __len__(self) -> int:
        return len(self._owners)

    @property
    def generation(self) -> int:
        """Moves on at each :meth:`forget`: a lookup begun before it is not remembered."""
        return self._generation

    def owner(self, token_hash: str, now: float) -> str | None:
        """The owner of the token hashed ``token_hash``, if remembered and not stale."""
        remembered = self._owners.get(token_hash)
        if remembered is None:
            return None
        owner_id, until = remembered
        if now >= until:
            del self._owners[token_hash]
            return None
        return owner_id

    def remember(self, token_hash: str, owner_id: str, now: float, generation: int) -> None:
        """Remember an owner looked up since ``generation``, unless something was forgotten
        since (the lookup may have read the store before a rotation)."""
        if generation != self._generation or self._ttl_s <= 0:
            return
        if len(self._owners) >= self._limit:
            for stale in list(self._owners)[: max(1, self._limit // 2)]:
                del self._owners[stale]
        self._owners[token_hash] = (owner_id, now + self._ttl_s)

    def forget(self) -> None:
        """Forget every owner, and leave the lookups under way to the requests that wait
        on them: a request from now on looks its token up afresh."""
        self._owners.clear()
        self._lookups.clear()
        self._generation += 1

    async def looked_up(self, token_hash: str, lookup: Callable[[], Awaitable[Holders]]) -> Holders:
        """``lookup()`` of ``token_hash`` in the store, shared by the requests that ask for it
        while it is under way: a new owner's first burst of requests (hundreds of runs
        started at once) makes one query, not one each. A waiter cancelled leaves the
        lookup to the others."""
        pending = self._lookups.get(token_hash)
        if pending is None:
            pending = self._lookups[token_hash] = asyncio.ensure_future(lookup())
            pending.add_done_callback(partial(self._done, token_hash))
        return await asyncio.shield(pending)

    def _done(self, token_hash: str, lookup: asyncio.Future[Holders]) -> None:
        if self._lookups.get(token_hash) is lookup:  # not one begun after a forget
            del self._lookups[token_hash]
