"""Shared fixtures. Outside services are used for real when reachable.

Under CI (``CI=true``) a missing service is a failure, never a skip; on a
developer's machine without it the test is skipped with the reason shown.
"""

from __future__ import annotations

import os
import shutil
import socket

import pytest

pytest_plugins = ["tests.integration.platform_fixtures"]

# With the `local` extra installed the house would answer with the local model everywhere; the
# tests that are about it turn it on (tests/local_model.py), every other test, and every server
# and CLI process the tests start, keeps the fast deterministic baseline.
os.environ.setdefault("PALAESTRA_LOCAL_MODEL_ENABLED", "false")

POSTGRES_URL = os.environ.get(
    "PALAESTRA_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("PALAESTRA_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def require(service: str, available: bool, why: str) -> None:
    """Skip (or, under CI, fail) the calling test when ``service`` is not available."""
    if available:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{service} is required under CI but {why}")
    pytest.skip(f"{service} is not available: {why}")


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def postgres_url() -> str:
    require("PostgreSQL", _reachable("127.0.0.1", 5432), "nothing listens on 127.0.0.1:5432")
    return POSTGRES_URL


@pytest.fixture(scope="session")
def redis_url() -> str:
    require("Redis", _reachable("127.0.0.1", 6379), "nothing listens on 127.0.0.1:6379")
    return REDIS_URL


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    require("Chromium", path is not None, "no chromium executable on PATH")
    assert path is not None
    return path
