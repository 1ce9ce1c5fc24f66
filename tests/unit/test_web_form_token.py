"""The session's form token (CSRF): an HMAC-SHA256 of a fixed label under the session id."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from palaestra.engine.web_sessions import form_token, form_token_matches

SESSION = "k3Jx9mZ-example-session-id-of-43-characters"


def test_the_form_token_is_an_hmac_under_the_session_id() -> None:
    expected = hmac.new(SESSION.encode(), b"palaestra form token v1", hashlib.sha256).hexdigest()
    assert form_token(SESSION) == expected
    assert SESSION not in form_token(SESSION)


@pytest.mark.parametrize(
    ("posted", "matches"),
    [
        (form_token(SESSION), True),
        ("", False),
        (form_token(SESSION)[:-1], False),
        (form_token(SESSION).upper(), False),
        (form_token("another-session"), False),
        (SESSION, False),
        ("é" * 64, False),
    ],
)
def test_only_the_sessions_own_form_token_matches(posted: str, matches: bool) -> None:
    assert form_token_matches(SESSION, posted) is matches
