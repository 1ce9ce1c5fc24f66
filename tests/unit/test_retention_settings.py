"""Retention's settings: documented defaults, and clear errors for values that cannot work."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from palaestra.settings import Settings


def _settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[arg-type]


def test_defaults_keep_events_a_month_and_task_bodies_a_quarter(tmp_path: Path) -> None:
    settings = _settings(data_dir=tmp_path)
    assert settings.retention_events_days == 30
    assert settings.retention_task_bodies_days == 90
    assert settings.retention_batch_rows == 5000
    assert settings.retention_receipts_days == 90
    assert settings.retention_web_sessions_days == 1
    assert settings.retention_leaderboard_snapshots == 10
    assert settings.effective_archive_dir == tmp_path / "archive"
    assert _settings(archive_dir=tmp_path / "elsewhere").effective_archive_dir == (
        tmp_path / "elsewhere"
    )


def test_zero_keeps_for_ever() -> None:
    settings = _settings(retention_events_days=0, retention_task_bodies_days=0)
    assert (settings.retention_events_days, settings.retention_task_bodies_days) == (0, 0)


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        (
            "retention_events_days",
            -1,
            "PALAESTRA_RETENTION_EVENTS_DAYS is -1: give a number of days from 1 to 3650, "
            "or 0 to keep for ever",
        ),
        (
            "retention_task_bodies_days",
            4000,
            "PALAESTRA_RETENTION_TASK_BODIES_DAYS is 4000: give a number of days from 1 to "
            "3650, or 0 to keep for ever",
        ),
        (
            "retention_receipts_days",
            -2,
            "PALAESTRA_RETENTION_RECEIPTS_DAYS is -2: give a number of days from 1 to 3650, "
            "or 0 to keep for ever",
        ),
        (
            "retention_web_sessions_days",
            3651,
            "PALAESTRA_RETENTION_WEB_SESSIONS_DAYS is 3651: give a number of days from 1 to "
            "3650, or 0 to keep for ever",
        ),
        ("retention_leaderboard_snapshots", 0, "greater than or equal to 1"),
        ("retention_batch_rows", 10, "greater than or equal to 100"),
        ("retention_batch_rows", 1_000_000, "less than or equal to 100000"),
        ("retention_pause_s", -0.5, "greater than or equal to 0"),
        ("retention_interval_s", 5, "greater than or equal to 60"),
        ("retention_partitions_ahead_days", 1, "greater than or equal to 2"),
    ],
)
def test_values_that_cannot_work_are_refused_with_the_reason(
    name: str, value: object, said: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        _settings(**{name: value})
    error = str(refused.value)
    assert name in error
    assert said in error


def test_the_environment_sets_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PALAESTRA_RETENTION_EVENTS_DAYS", "7")
    monkeypatch.setenv("PALAESTRA_RETENTION_TASK_BODIES_DAYS", "days")
    with pytest.raises(ValidationError) as refused:
        _settings()
    assert "retention_task_bodies_days" in str(refused.value)
    monkeypatch.setenv("PALAESTRA_RETENTION_TASK_BODIES_DAYS", "14")
    settings = _settings()
    assert (settings.retention_events_days, settings.retention_task_bodies_days) == (7, 14)
