"""What the browser tests check on every page: it fits a phone, and axe-core finds no
serious violation."""

from __future__ import annotations

from collections.abc import Sequence

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

__all__ = ["DESKTOP", "PHONE", "SERIOUS", "assert_fits_phone", "serious_violations"]

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
#: Impacts axe-core rates serious or critical: a page must have none.
SERIOUS = {"serious", "critical"}


def assert_fits_phone(phone: Page, url: str, path: str) -> None:
    """Open ``url`` on ``phone``: nothing is wider than the screen, and every navigation
    link can be seen and tapped without scrolling sideways."""
    phone.goto(url)
    expect(phone.locator("h1")).to_be_visible()
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"{path} is {width} px wide"
    for link in phone.get_by_role("navigation").get_by_role("link").all():
        box = link.bounding_box()
        assert box is not None, path
        inside = box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
        assert inside, f"{path}: the link {link.inner_text()!r} is cut at {box}"


def serious_violations(page: Page, base: str, paths: Sequence[str]) -> list[str]:
    """Each of ``paths`` (under ``base``) scanned by axe-core (WCAG 2.1 A and AA rules and its
    best practices) on ``page``, in the light and the dark colour scheme: its serious and
    critical violations, a line each."""
    axe = Axe()
    found: list[str] = []
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for path in paths:
            page.goto(base + path)
            expect(page.locator("h1")).to_be_visible()
            for violation in axe.run(page).response["violations"]:
                if violation["impact"] in SERIOUS:
                    where = [node["target"] for node in violation["nodes"]][:3]
                    found.append(
                        f"{scheme} {path}: {violation['id']} ({violation['impact']}) {where}"
                    )
    return found
