"""The built documentation site is served at /guide, and linked from every page, when it exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.platform import Platform
from tests.integration.platform_fixtures import running
from tests.integration.web_support import page, still

pytestmark = pytest.mark.asyncio


def built_site(folder: Path) -> Path:
    (folder / "agents" / "cage").mkdir(parents=True)
    (folder / "index.html").write_text("<h1>Palaestra guide</h1>")
    (folder / "agents" / "cage" / "index.html").write_text("<h1>cage.v1 for agent authors</h1>")
    return folder


async def test_a_built_site_is_served_and_linked(platform: Platform, tmp_path: Path) -> None:
    still(platform).settings.guide_dir = built_site(tmp_path / "site")
    async with running(platform) as api:
        status, body = await page(api, "/guide/")
        assert (status, body) == (200, "<h1>Palaestra guide</h1>")
        status, body = await page(api, "/guide/agents/cage/")
        assert (status, body) == (200, "<h1>cage.v1 for agent authors</h1>")
        status, _ = await page(api, "/guide/%2e%2e/%2e%2e/pyproject.toml")
        assert status == 404
        for path in ("/", "/agents", "/matches"):
            _, body = await page(api, path)
            assert '<a href="/guide/">guide</a>' in body


async def test_without_a_built_site_there_is_no_guide(platform: Platform, tmp_path: Path) -> None:
    still(platform).settings.guide_dir = tmp_path / "never-built"
    async with running(platform) as api:
        status, _ = await page(api, "/guide/")
        assert status == 404
        _, body = await page(api, "/")
        assert "/guide/" not in body
