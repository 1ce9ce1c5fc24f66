"""What of a reason line the public sees (kind and status), and what its owner sees (all of
it, secrets redacted, capped)."""

from __future__ import annotations

import pytest

from palaestra.protocol.failures import Failure, UnreachableStage
from palaestra.rules.reasons import (
    PUBLIC_FALLBACK,
    REASON_CAP,
    owner_reason,
    public_reason,
    redact,
)

CONNECTION = "postgresql://app:hunter2@db.internal:5432/prod"


@pytest.mark.parametrize(
    ("reason", "public"),
    [
        (
            Failure.http_status(400, f'{{"error": "cannot reach {CONNECTION}"}}').reason,
            "External agent responded with 400",
        ),
        (Failure.timeout(5000).reason, "External agent timed out after 5000ms"),
        (Failure.too_large().reason, "External agent response exceeded 262144 bytes"),
        (
            Failure.unreachable(UnreachableStage.DNS, "Name or service not known").reason,
            "External agent unreachable: dns",
        ),
        (
            Failure.refused("10.0.0.7 is a private address").reason,
            "Endpoint refused by egress policy",
        ),
        (Failure.invalid_json("Unexpected token 's' in JSON at position 0").reason, "Invalid JSON"),
        ("Unexpected end of JSON input", "Invalid JSON"),
        ("Validation failed: output.candidate_title: expected a string", "Validation failed"),
        ("Challenge failed: the reply did not echo the nonce", "Challenge failed"),
        (
            "model provider failed: External agent responded with 500: sk-live-secret",
            "model provider failed: External agent responded with 500",
        ),
        (
            "not reached: External agent timed out after 5000ms",
            "not reached: External agent timed out after 5000ms",
        ),
        ("turn 2: arena fault: UnicodeError: encoding with 'idna'", "turn 2: arena fault"),
        ("the provider sent no chat completion (missing 'choices')", PUBLIC_FALLBACK),
        (
            "accepts forged signatures: a dispatch with a corrupted signature was answered 200, "
            "expected a 4xx",
            "accepts forged signatures: a dispatch with a corrupted signature was answered 200, "
            "expected a 4xx",
        ),
        (
            "accepts forged signatures: a dispatch with a corrupted signature was not refused: "
            "External agent unreachable: reset: server disconnected",
            "accepts forged signatures: a dispatch with a corrupted signature was not refused",
        ),
        (
            "x" * 200 + "External agent responded with 502: body",
            "External agent responded with 502",
        ),
        (None, None),
    ],
)
def test_the_public_sees_the_kind_and_status_only(reason: str | None, public: str | None) -> None:
    assert public_reason(reason) == public


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            f"cannot reach {CONNECTION}",
            "cannot reach postgresql://[redacted]@db.internal:5432/prod",
        ),
        ("mongodb+srv://root:pw@cluster0/x", "mongodb+srv://[redacted]@cluster0/x"),
        ("redis://:s3cret@cache:6379/0", "redis://[redacted]@cache:6379/0"),
        ("https://user@host/", "https://[redacted]@host/"),
        ("Authorization: Bearer abc.def-ghi_123", "Authorization: Bearer [redacted]"),
        ("auth header was basic dXNlcjpwYXNz", "auth header was basic [redacted]"),
        ("x-api-key: 12345", "x-api-key: [redacted]"),
        ("GET /v1?api_key=abcdef&q=1", "GET /v1?api_key=[redacted]&q=1"),
        ("Server=db;User Id=sa;Password=Pa55;", "Server=db;User Id=sa;Password=[redacted];"),
        ("key=topsecret, then", "key=[redacted], then"),
        ("DB_PASSWORD = 'quoted value'", "DB_PASSWORD = [redacted]"),
        ('{"password": "hunter2", "user": "app"}', '{"password": "[redacted]", "user": "app"}'),
        ("{'client_secret': 'abc'}", "{'client_secret': \"[redacted]\"}"),
        ("the key sk-proj-abcdefghijklmnop1234 leaked", "the key [redacted] leaked"),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123", "[redacted]"),
        ("AKIAABCDEFGHIJKLMNOP", "[redacted]"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlLWhlcmU", "jwt [redacted]"),
        ("agent key ea_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "agent key [redacted]"),
    ],
)
def test_obvious_secrets_are_redacted(text: str, shown: str) -> None:
    assert redact(text) == shown


@pytest.mark.parametrize(
    "text",
    [
        "Validation failed: output.token_count: expected an integer",
        "Validation failed: promptTokens: expected a number, got string",
        "External agent responded with 404: not found",
        "monkey=banana",
        "the keynote is at https://example.com/talks",
        "External agent timed out after 5000ms",
    ],
)
def test_a_reason_without_a_secret_is_left_as_it_is(text: str) -> None:
    assert redact(text) == text


def test_the_owner_sees_the_whole_line_redacted_and_capped() -> None:
    line = Failure.http_status(400, f"db at {CONNECTION} is down").reason
    assert owner_reason(line) == (
        "External agent responded with 400: db at postgresql://[redacted]@db.internal:5432/prod"
        " is down"
    )
    long = "Validation failed: " + "x" * 2000
    capped = owner_reason(long)
    assert capped is not None
    assert len(capped) == REASON_CAP
    assert capped.endswith("…")
    assert owner_reason(None) is None
