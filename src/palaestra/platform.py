"""The platform's parts, built once from the settings and handed to every service."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from palaestra.clock import Clock, SystemClock
from palaestra.egress import EgressClient
from palaestra.metrics import Metrics
from palaestra.rules.status import PingSchedule
from palaestra.security import KeyVault, OwnerTokens
from palaestra.settings import Settings
from palaestra.store.db import Database

__all__ = ["Platform"]


@dataclass
class Platform:
    """Settings, store, egress, clock, vault and metrics: what services take as arguments."""

    settings: Settings
    db: Database
    egress: EgressClient
    clock: Clock
    vault: KeyVault
    metrics: Metrics = field(default_factory=Metrics)
    rng: random.Random = field(default_factory=random.Random)
    #: The owners of the tokens seen, so that a request's authentication is no query.
    owner_tokens: OwnerTokens = field(default_factory=OwnerTokens)

    @classmethod
    async def open(
        cls,
        settings: Settings,
        *,
        clock: Clock | None = None,
        egress: EgressClient | None = None,
        migrate: bool = True,
    ) -> Platform:
        """Connect to the database (migrating it) and prepare the egress client."""
        db = Database(settings.effective_database_url)
        if migrate:
            await db.migrate()
        clock = clock or SystemClock()
        return cls(
            settings=settings,
            db=db,
            egress=egress or EgressClient(settings.egress_policy, clock=clock),
            clock=clock,
            vault=KeyVault(settings.ensure_secret_key()),
            owner_tokens=OwnerTokens(ttl_s=settings.owner_token_cache_s),
        )

    @property
    def schedule(self) -> PingSchedule:
        return PingSchedule(
            self.rng, self.settings.health_jitter, self.settings.health_interval_scale
        )

    async def close(self) -> None:
        await self.egress.close()
        await self.db.dispose()
