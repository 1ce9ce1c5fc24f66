"""The secret key's file: generated 0600, and one found open to other users narrowed with a
warning (or, when it cannot be, the start stopped with a clear error)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import structlog.testing
from cryptography.fernet import Fernet

from palaestra.errors import ConfigurationError
from palaestra.settings import Settings


def make(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[arg-type]


def test_a_generated_key_is_0600(tmp_path: Path) -> None:
    with structlog.testing.capture_logs() as logs:
        key = make(data_dir=tmp_path / "data").ensure_secret_key()
    assert stat.S_IMODE((tmp_path / "data" / "secret.key").stat().st_mode) == 0o600
    assert (tmp_path / "data" / "secret.key").read_text() == key + "\n"
    assert logs == []


@pytest.mark.parametrize("wide", [0o644, 0o640, 0o604, 0o660, 0o666])
def test_an_existing_secret_key_open_to_others_is_narrowed_with_a_warning(
    tmp_path: Path, wide: int
) -> None:
    path = tmp_path / "secret.key"
    key = Fernet.generate_key().decode()
    path.write_text(key + "\n")
    os.chmod(path, wide)
    with structlog.testing.capture_logs() as logs:
        assert make(data_dir=tmp_path).ensure_secret_key() == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    [warning] = [entry for entry in logs if entry["log_level"] == "warning"]
    assert warning["event"] == "the secret key file was readable by other users: narrowed to 0600"
    assert warning["was"] == oct(wide)
    assert key not in str(logs)


def test_a_private_secret_key_is_used_without_a_word(tmp_path: Path) -> None:
    path = tmp_path / "secret.key"
    path.write_text(Fernet.generate_key().decode())
    os.chmod(path, 0o400)
    with structlog.testing.capture_logs() as logs:
        make(data_dir=tmp_path).ensure_secret_key()
    assert logs == []
    assert stat.S_IMODE(path.stat().st_mode) == 0o400  # narrower than 0600 is left alone


def test_a_secret_key_open_to_others_that_cannot_be_narrowed_stops_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "secret.key"
    path.write_text(Fernet.generate_key().decode())
    os.chmod(path, 0o644)

    def refuse(self: Path, mode: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(Path, "chmod", refuse)
    with pytest.raises(ConfigurationError, match=r"readable by other users \(mode 0o644\)"):
        make(data_dir=tmp_path).ensure_secret_key()
