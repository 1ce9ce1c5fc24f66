"""The pages keep to their Content-Security-Policy: no inline script, style or handler."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import palaestra.web

TEMPLATES = sorted((Path(palaestra.web.__file__).parent / "templates").glob("*.html"))

#: What a ``script-src 'self'; style-src 'self'`` policy refuses in markup.
REFUSED = {
    "inline script": re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE),
    "inline style element": re.compile(r"<style\b", re.IGNORECASE),
    "style attribute": re.compile(r"\sstyle\s*=", re.IGNORECASE),
    "event handler attribute": re.compile(r"\son[a-z]+\s*=", re.IGNORECASE),
    "javascript: URL": re.compile(r"javascript:", re.IGNORECASE),
    "htmx handler (needs eval)": re.compile(r"\shx-on", re.IGNORECASE),
    "script from elsewhere": re.compile(r"<script[^>]*\bsrc=\"(?!/static/)", re.IGNORECASE),
}


def test_there_are_templates() -> None:
    assert len(TEMPLATES) > 10


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda path: path.name)
def test_a_template_needs_nothing_the_page_policy_refuses(template: Path) -> None:
    text = template.read_text()
    found = [what for what, pattern in REFUSED.items() if pattern.search(text)]
    assert found == []


@pytest.mark.parametrize(
    "markup",
    [
        "<script>alert(1)</script>",
        '<div style="color: red">',
        '<button onclick="go()">',
        '<a href="javascript:go()">',
        '<div hx-on:click="go()">',
        '<script src="https://cdn.example/x.js"></script>',
        "<style>p { }</style>",
    ],
)
def test_the_scan_finds_what_the_policy_refuses(markup: str) -> None:
    assert any(pattern.search(markup) for pattern in REFUSED.values())


def test_the_scan_passes_our_own_script() -> None:
    markup = '<script src="/static/htmx.min.js?v=2.0.11" defer></script>'
    assert not any(pattern.search(markup) for pattern in REFUSED.values())
