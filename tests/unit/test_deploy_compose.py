"""The reference compose file is well formed and agrees with the code (docker cannot run here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from palaestra.cli import commands  # noqa: F401  (registers the commands)
from palaestra.cli.app import app
from palaestra.settings import Settings

DEPLOY = Path(__file__).resolve().parents[2] / "docs" / "deploy"
PALAESTRA_SERVICES = ("migrate", "api", "worker")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded


def test_the_topology(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {"postgres", "redis", *PALAESTRA_SERVICES}
    assert services["api"]["command"][:3] == ["palaestra", "serve", "--no-workers"]
    assert services["worker"]["command"][:2] == ["palaestra", "worker"]
    assert services["worker"]["deploy"]["replicas"] >= 2
    assert services["migrate"]["command"] == ["palaestra", "migrate"]
    assert "--appendonly" in services["redis"]["command"]  # the queue survives a restart
    for name in ("api", "worker"):
        after = services[name]["depends_on"]
        assert after["migrate"] == {"condition": "service_completed_successfully"}
        assert after["redis"] == {"condition": "service_healthy"}
    assert set(compose["volumes"]) == {"postgres-data", "redis-data"}


def test_every_process_shares_the_store_broker_and_key(compose: dict[str, Any]) -> None:
    shared = ("DATABASE_URL", "BROKER_URL", "BROKER_QUEUE", "SECRET_KEY", "ADMIN_TOKEN")
    seen = {
        name: {
            f"PALAESTRA_{key}": compose["services"][name]["environment"].get(f"PALAESTRA_{key}")
            for key in shared
        }
        for name in PALAESTRA_SERVICES
    }
    assert all(value is not None for env in seen.values() for value in env.values())
    assert seen["api"] == seen["worker"] == seen["migrate"]
    assert seen["api"]["PALAESTRA_DATABASE_URL"].startswith("postgresql+asyncpg://")
    assert seen["api"]["PALAESTRA_BROKER_URL"].startswith("redis://")


def test_every_variable_and_option_named_exists(compose: dict[str, Any]) -> None:
    fields = set(Settings.model_fields)
    for name in PALAESTRA_SERVICES:
        for variable in compose["services"][name]["environment"]:
            assert variable.removeprefix("PALAESTRA_").lower() in fields, variable
    runner = CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"})
    for name in ("api", "worker"):
        command = compose["services"][name]["command"]
        help_text = runner.invoke(app, [command[1], "--help"]).output
        for option in (part for part in command if part.startswith("--")):
            assert option in help_text, (name, option)
    assert "pip install" in (DEPLOY / "Dockerfile").read_text()
