"""HMAC signing and verification, checked against signatures computed here with the stdlib."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable

import pytest

from palaestra.protocol import (
    SIGNATURE_HEADER,
    TASK_ID_HEADER,
    TIMESTAMP_HEADER,
    SignatureProblem,
    VerificationFailed,
    sign,
    signature_target,
    signed_headers,
    verify,
)

KEY = "ea_live_5f2b8c0e9d"
NOW = 1_767_225_600
BODY = b'{"taskId":"0192f4a9-1be4-7123-b21d-0a55f00d4c8e","phase":"SCOUT"}'


def expected(key: str, timestamp: int, target: str, body: bytes) -> str:
    material = f"{timestamp}\n{target}\n".encode() + body
    return "sha256=" + hmac.new(key.encode(), material, hashlib.sha256).hexdigest()


@pytest.mark.parametrize(
    ("url", "target"),
    [
        ("https://agent.example.com/hook", "agent.example.com/hook"),
        ("https://agent.example.com", "agent.example.com/"),
        ("https://agent.example.com/", "agent.example.com/"),
        ("https://Agent.Example.COM/Hook", "agent.example.com/Hook"),
        ("https://agent.example.com:8443/hook", "agent.example.com:8443/hook"),
        ("https://agent.example.com:443/hook", "agent.example.com/hook"),
        ("http://agent.example.com:80/hook", "agent.example.com/hook"),
        ("http://127.0.0.1:9000/a/b", "127.0.0.1:9000/a/b"),
        ("https://agent.example.com/hook?x=1&y=2", "agent.example.com/hook"),
        ("https://agent.example.com/hook#frag", "agent.example.com/hook"),
        ("https://[2001:db8::1]:8443/p", "[2001:db8::1]:8443/p"),
        ("https://agent.example.com/a%20b", "agent.example.com/a%20b"),
    ],
)
def test_signature_target_is_host_and_pathname(url: str, target: str) -> None:
    assert signature_target(url) == target


def test_sign_matches_stdlib_hmac() -> None:
    target = "agent.example.com:8443/hook"
    assert sign(KEY, NOW, target, BODY) == expected(KEY, NOW, target, BODY)


def test_signed_headers_carry_all_three_headers() -> None:
    url = "https://agent.example.com:8443/hook?ignored=1"
    headers = signed_headers(KEY, url, BODY, NOW, task_id="t-1").as_dict()
    assert headers == {
        SIGNATURE_HEADER: expected(KEY, NOW, "agent.example.com:8443/hook", BODY),
        TIMESTAMP_HEADER: str(NOW),
        TASK_ID_HEADER: "t-1",
    }
    assert TASK_ID_HEADER not in signed_headers(KEY, url, BODY, NOW).as_dict()


def test_verify_accepts_a_good_signature() -> None:
    target = "agent.example.com/hook"
    signature = expected(KEY, NOW, target, BODY)
    assert verify(KEY, target, BODY, signature, str(NOW), now=NOW) == NOW


@pytest.mark.parametrize(
    ("key", "target", "body", "timestamp"),
    [
        ("another-key", "agent.example.com/hook", BODY, NOW),
        (KEY, "agent.example.com/hook", BODY + b" ", NOW),
        (KEY, "agent.example.com/hook", BODY.replace(b"SCOUT", b"BUILD"), NOW),
        (KEY, "agent.example.com/hook", BODY, NOW - 1),
        (KEY, "evil.example.com/hook", BODY, NOW),
        (KEY, "agent.example.com:8443/hook", BODY, NOW),
        (KEY, "agent.example.com/other", BODY, NOW),
        (KEY, "agent.example.com/hook/", BODY, NOW),
    ],
    ids=["key", "body-appended", "body-changed", "timestamp", "host", "port", "path", "slash"],
)
def test_verify_rejects_each_tampered_part(
    key: str, target: str, body: bytes, timestamp: int
) -> None:
    signature = expected(key, timestamp, target, body)
    with pytest.raises(VerificationFailed) as caught:
        verify(KEY, "agent.example.com/hook", BODY, signature, str(NOW), now=NOW)
    assert caught.value.problem is SignatureProblem.BAD_SIGNATURE


@pytest.mark.parametrize("skew", [-300, -1, 0, 1, 300])
def test_window_edges_inside(skew: int) -> None:
    stamp = NOW + skew
    signature = expected(KEY, stamp, "a.example/x", BODY)
    assert verify(KEY, "a.example/x", BODY, signature, str(stamp), now=NOW) == stamp


@pytest.mark.parametrize("skew", [-301, 301, -86_400, 86_400])
def test_window_edges_outside(skew: int) -> None:
    stamp = NOW + skew
    signature = expected(KEY, stamp, "a.example/x", BODY)
    with pytest.raises(VerificationFailed) as caught:
        verify(KEY, "a.example/x", BODY, signature, str(stamp), now=NOW)
    assert caught.value.problem is SignatureProblem.STALE_TIMESTAMP
    assert caught.value.skew == -skew
    assert str(caught.value) == (f"Signature timestamp outside ±300s replay window (skew={-skew}s)")


def test_fractional_now_is_floored() -> None:
    stamp = NOW - 300
    signature = expected(KEY, stamp, "a.example/x", BODY)
    assert verify(KEY, "a.example/x", BODY, signature, str(stamp), now=NOW + 0.999) == stamp


@pytest.mark.parametrize(
    "timestamp",
    [None, "", " ", "abc", "1.5e9", "-1767225600", "0x6955b900", "١٧٦٧٢٢٥٦٠٠", "9" * 13],
)
def test_malformed_timestamps(timestamp: str | None) -> None:
    with pytest.raises(VerificationFailed) as caught:
        verify(KEY, "a.example/x", BODY, "sha256=00", timestamp, now=NOW)
    assert caught.value.problem is SignatureProblem.MISSING_TIMESTAMP
    assert str(caught.value) == "Invalid or missing X-EdgeArena-Timestamp header"


@pytest.mark.parametrize(
    "header",
    [
        "",
        "sha256=",
        "sha256",
        "md5=abc",
        "sha256=zz",
        "sha256=" + "0" * 64,
        "SHA256=" + "0" * 64,
        "sha256=é",
        "sha256=" + "a" * 10_000,
    ],
)
def test_malformed_signature_values(header: str) -> None:
    with pytest.raises(VerificationFailed) as caught:
        verify(KEY, "a.example/x", BODY, header, str(NOW), now=NOW)
    assert caught.value.problem in {
        SignatureProblem.BAD_SIGNATURE,
        SignatureProblem.MISSING_SIGNATURE,
    }


def test_missing_signature() -> None:
    with pytest.raises(VerificationFailed) as caught:
        verify(KEY, "a.example/x", BODY, None, str(NOW), now=NOW)
    assert caught.value.problem is SignatureProblem.MISSING_SIGNATURE


def alternate_case(text: str) -> str:
    return "".join(c.upper() if i % 2 else c for i, c in enumerate(text))


@pytest.mark.parametrize(
    "spell",
    [
        lambda hexdigest: "sha256=" + hexdigest.upper(),
        lambda hexdigest: "sha256=" + alternate_case(hexdigest),
        lambda hexdigest: "SHA256=" + hexdigest.upper(),
        lambda hexdigest: " Sha256=" + hexdigest + " ",
    ],
    ids=["upper-hex", "mixed-hex", "upper-all", "mixed-label"],
)
def test_verify_ignores_the_case_of_the_hex_and_the_label(spell: Callable[[str], str]) -> None:
    material = f"{NOW}\na.example/x\n".encode() + BODY
    hexdigest = hmac.new(KEY.encode(), material, hashlib.sha256).hexdigest()
    signature = spell(hexdigest)
    assert signature.strip() != expected(KEY, NOW, "a.example/x", BODY)
    assert verify(KEY, "a.example/x", BODY, signature, str(NOW), now=NOW) == NOW


def test_unicode_key_and_empty_body() -> None:
    key = "clé-секрет"
    assert sign(key, NOW, "a.example/", b"") == expected(key, NOW, "a.example/", b"")
