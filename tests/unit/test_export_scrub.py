"""Free-form JSON loses every key named like a credential before it is exported."""

from __future__ import annotations

from palaestra.engine.export.records import scrub


def test_scrub_drops_credential_keys_at_any_depth() -> None:
    value = {
        "API_KEY": 1,
        "x-agent-key": 2,
        "keep": [{"token": 3, "tokens": 4}, {"Secret": {"deep": 5}}],
        "keys": {"key": 6, "monkey": 7},
    }
    assert scrub(value) == {"keep": [{"tokens": 4}, {}], "keys": {"monkey": 7}}
    assert scrub(None) is None
    assert scrub("key") == "key"
