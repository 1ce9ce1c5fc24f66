"""The settings object: environment, defaults, the generated secret key, masking."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr, ValidationError

from palaestra.cli.settings_rows import described
from palaestra.errors import ConfigurationError
from palaestra.security import KeyVault, OwnerTokens, hash_token, new_token, token_matches
from palaestra.settings import Settings


def make(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[arg-type]


def test_environment_variables_are_prefixed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PALAESTRA_PORT", "9123")
    monkeypatch.setenv("PALAESTRA_EGRESS_ALLOW", "127.0.0.0/8, ::1/128")
    monkeypatch.setenv("PALAESTRA_FIGHTER_CLASSES", "rogue,lab")
    settings = make()
    assert settings.port == 9123
    assert settings.egress_allow == ["127.0.0.0/8", "::1/128"]
    assert settings.fighter_classes == ["rogue", "lab"]
    assert settings.egress_policy.allow[0].compressed == "127.0.0.0/8"


def test_defaults_are_safe(tmp_path: Path) -> None:
    settings = make(data_dir=tmp_path)
    assert settings.egress_allow == []
    assert settings.egress_policy.allow == ()
    assert settings.effective_database_url == f"sqlite+aiosqlite:///{tmp_path / 'palaestra.db'}"
    assert settings.host == "127.0.0.1"


def test_invalid_values_are_refused() -> None:
    with pytest.raises(ValidationError):
        make(port=70000)
    with pytest.raises(ConfigurationError, match="PALAESTRA_EGRESS_ALLOW"):
        _ = make(egress_allow=["not-a-range"]).egress_policy


def test_secret_key_is_generated_once_with_mode_0600(tmp_path: Path) -> None:
    settings = make(data_dir=tmp_path / "data")
    key = settings.ensure_secret_key()
    path = tmp_path / "data" / "secret.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert settings.ensure_secret_key() == key  # read back, not regenerated
    KeyVault(key)  # a usable Fernet key


def test_a_configured_secret_key_wins_and_no_file_is_written(tmp_path: Path) -> None:
    key = Fernet.generate_key().decode()
    settings = make(data_dir=tmp_path, secret_key=SecretStr(key))
    assert settings.ensure_secret_key() == key
    assert not (tmp_path / "secret.key").exists()


def test_described_masks_every_secret(tmp_path: Path) -> None:
    settings = make(
        data_dir=tmp_path,
        secret_key=SecretStr("fernet-secret"),
        admin_token=SecretStr("admin-secret"),
        house_api_key=SecretStr("sk-house"),
        database_url="postgresql+asyncpg://user:db-password@db.example/palaestra",
    )
    rows = {name: value for name, value, _ in described(settings)}
    text = " ".join(rows.values())
    for secret in ("fernet-secret", "admin-secret", "sk-house", "db-password"):
        assert secret not in text
    assert rows["PALAESTRA_SECRET_KEY"] == "********"
    assert rows["PALAESTRA_DATABASE_URL"] == "postgresql+asyncpg://user:***@db.example/palaestra"
    assert all(description for _, _, description in described(settings))


def test_vault_round_trip_and_wrong_key() -> None:
    vault = KeyVault(Fernet.generate_key().decode())
    sealed = vault.seal("ea_agent-key")
    assert "ea_agent-key" not in sealed
    assert vault.open(sealed) == "ea_agent-key"
    with pytest.raises(ConfigurationError, match="secret key changed"):
        KeyVault(Fernet.generate_key().decode()).open(sealed)
    with pytest.raises(ConfigurationError, match="Fernet key"):
        KeyVault("too-short")


class _CountedFernet:
    """A vault's Fernet that notes every token it decrypts (cryptography's own
    Fernet is a Rust object whose methods cannot be replaced)."""

    def __init__(self, fernet: Fernet) -> None:
        self._fernet = fernet
        self.decrypted: list[bytes] = []

    def encrypt(self, data: bytes) -> bytes:
        return self._fernet.encrypt(data)

    def decrypt(self, token: bytes) -> bytes:
        self.decrypted.append(token)
        return self._fernet.decrypt(token)


def test_vault_remembers_opened_keys_by_their_sealed_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = Fernet.generate_key().decode()
    vault = KeyVault(secret)
    old, new = vault.seal("ea_old-key"), vault.seal("ea_rotated-key")
    counted = _CountedFernet(vault._fernet)
    decrypted = counted.decrypted
    monkeypatch.setattr(vault, "_fernet", counted)
    assert vault.open(old) == "ea_old-key"
    assert vault.open(old) == "ea_old-key"  # remembered: decrypted once
    assert decrypted == [old.encode()]
    assert vault.open(new) == "ea_rotated-key"  # a rotation seals anew: nothing stale
    # What one vault remembers never opens anything for a vault of another secret.
    with pytest.raises(ConfigurationError, match="secret key changed"):
        KeyVault(Fernet.generate_key().decode()).open(old)
    for n in range(KeyVault._REMEMBERED + 5):  # bounded: the memory starts over when full
        assert vault.open(vault.seal(f"ea_{n}")) == f"ea_{n}"
    assert len(vault._opened) <= KeyVault._REMEMBERED


def test_tokens_are_random_and_checked_by_hash() -> None:
    first, second = new_token("pa_owner"), new_token("pa_owner")
    assert first != second
    assert first.startswith("pa_owner_")
    assert len(first) > 40
    assert token_matches(first, hash_token(first))
    assert not token_matches(second, hash_token(first))


def test_owner_tokens_are_remembered_by_hash_bounded_and_forgotten_at_once() -> None:
    tokens = OwnerTokens(limit=4)
    now, seen = 100.0, tokens.generation
    assert tokens.owner(hash_token("pa_owner_a"), now) is None
    tokens.remember(hash_token("pa_owner_a"), "owner-a", now, seen)
    assert tokens.owner(hash_token("pa_owner_a"), now) == "owner-a"
    assert tokens.owner(hash_token("pa_owner_b"), now) is None
    for n in range(10):
        tokens.remember(hash_token(f"pa_owner_{n}"), f"owner-{n}", now, seen)
        assert len(tokens) <= 4
    assert tokens.owner(hash_token("pa_owner_9"), now) == "owner-9"  # the newest stays
    assert tokens.owner(hash_token("pa_owner_a"), now) is None  # the oldest went
    tokens.forget()
    assert len(tokens) == 0
    assert tokens.owner(hash_token("pa_owner_9"), now) is None


def test_an_owner_token_is_remembered_for_the_cache_time_only() -> None:
    tokens = OwnerTokens(ttl_s=5.0)
    tokens.remember(hash_token("pa_owner_a"), "owner-a", 100.0, tokens.generation)
    assert tokens.owner(hash_token("pa_owner_a"), 104.9) == "owner-a"
    assert tokens.owner(hash_token("pa_owner_a"), 105.0) is None  # stale: looked up again
    assert len(tokens) == 0
    never = OwnerTokens(ttl_s=0)
    never.remember(hash_token("pa_owner_a"), "owner-a", 100.0, never.generation)
    assert never.owner(hash_token("pa_owner_a"), 100.0) is None


def test_a_lookup_begun_before_a_forget_is_not_remembered() -> None:
    """A lookup may have read the store before a token was rotated: its answer is not kept."""
    tokens = OwnerTokens()
    before = tokens.generation
    tokens.forget()
    tokens.remember(hash_token("pa_owner_a"), "owner-a", 100.0, before)
    assert tokens.owner(hash_token("pa_owner_a"), 100.0) is None
    tokens.remember(hash_token("pa_owner_a"), "owner-a", 100.0, tokens.generation)
    assert tokens.owner(hash_token("pa_owner_a"), 100.0) == "owner-a"


async def test_a_request_after_a_forget_does_not_join_a_lookup_begun_before() -> None:
    tokens = OwnerTokens()
    release = asyncio.Event()
    answers = iter([("admin", "owner-old"), ("admin", None)])

    async def lookup() -> tuple[str | None, str | None]:
        answer = next(answers)
        if answer[1] is not None:
            await release.wait()  # the first lookup read the store before the rotation
        return answer

    early = asyncio.create_task(tokens.looked_up("h", lookup))
    await asyncio.sleep(0)
    tokens.forget()  # the token was rotated meanwhile
    late = await tokens.looked_up("h", lookup)
    release.set()
    assert await early == ("admin", "owner-old")
    assert late == ("admin", None)
