"""The architecture page names only modules that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "contributing" / "architecture.md"
#: A file named in backquotes: ``store/models.py``, ``wire.py``.
NAMED = re.compile(r"`([\w/]+\.py)`")


def test_every_module_the_page_names_exists() -> None:
    files = [
        path.relative_to(ROOT).as_posix()
        for folder in ("src", "tests", "examples", "bench")
        for path in (ROOT / folder).rglob("*.py")
    ]
    named = set(NAMED.findall(PAGE.read_text()))
    missing = {
        name for name in named if not any(f == name or f.endswith("/" + name) for f in files)
    }
    assert named
    assert missing == set()
