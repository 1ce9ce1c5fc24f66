"""HMAC signing and verification, checked against signatures computed here with the stdlib."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable

import pytest

from palaestra.errors import SignatureError
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


# Expected strings written from the WHATWG URL standard (what ``new URL(u).host +
# new URL(u).pathname`` gives), not from the code under test.
WHATWG_TARGETS = [
    pytest.param("https://EXAMPLE.com/x", "example.com/x", id="upper-case-host"),
    pytest.param("HTTPS://A.EXAMPLE/P", "a.example/P", id="upper-case-scheme-path-kept"),
    pytest.param("https://bücher.example/", "xn--bcher-kva.example/", id="idn"),
    pytest.param("https://BÜCHER.Example/", "xn--bcher-kva.example/", id="idn-upper-case"),
    pytest.param("https://%62%C3%BCcher.example/", "xn--bcher-kva.example/", id="idn-escaped"),
    pytest.param("https://faß.de/", "xn--fa-hia.de/", id="idn-nontransitional"),
    pytest.param("https://a.example/a/../b c/ü", "a.example/b%20c/%C3%BC", id="dots-space-utf8"),
    pytest.param("https://a.example/./p/.", "a.example/p/", id="single-dots"),
    pytest.param("https://a.example/a/%2e%2E/b", "a.example/b", id="escaped-dots"),
    pytest.param("https://a.example/a/..", "a.example/", id="final-double-dot"),
    pytest.param("https://a.example/../..", "a.example/", id="above-the-root"),
    pytest.param("https://a.example/a\\b", "a.example/a/b", id="backslash-is-a-slash"),
    # ``^`` joined the path set in 2025: Ada encodes every one since 3.2.6 (ada-url 1.25);
    # Node 20, on an older Ada, still leaves it as it is.
    pytest.param('https://a.example/"<>`{}^', "a.example/%22%3C%3E%60%7B%7D%5E", id="path-set"),
    pytest.param("https://a.example/a^b", "a.example/a%5Eb", id="caret-alone"),
    pytest.param("https://a.example/\ud800", "a.example/%EF%BF%BD", id="lone-surrogate"),
    pytest.param("https://a.example/%7e%2f|~!$'", "a.example/%7e%2f|~!$'", id="left-alone"),
    pytest.param("https://a.example/%zz%", "a.example/%zz%", id="stray-percent"),
    pytest.param("https://a.example:443/p", "a.example/p", id="default-port"),
    pytest.param("https://a.example:0443/p", "a.example/p", id="default-port-zero-padded"),
    pytest.param("https://a.example:/p", "a.example/p", id="empty-port"),
    pytest.param("https://a.example:8443/p", "a.example:8443/p", id="other-port"),
    pytest.param("http://a.example:443/p", "a.example:443/p", id="https-port-on-http"),
    pytest.param("https://a.example/p?q=1", "a.example/p", id="query"),
    pytest.param("https://a.example/p?", "a.example/p", id="empty-query"),
    pytest.param("https://a.example/p#f?q", "a.example/p", id="fragment"),
    pytest.param("https://a.example/p/", "a.example/p/", id="trailing-slash"),
    pytest.param("https://a.example", "a.example/", id="empty-path"),
    pytest.param("https://a.example?q", "a.example/", id="empty-path-query"),
    pytest.param("https://a.example./p", "a.example./p", id="root-dot-kept"),
    pytest.param("https://user:pw@a.example/p", "a.example/p", id="credentials"),
    pytest.param("https:a.example/p", "a.example/p", id="no-slashes"),
    pytest.param("https:///a.example/p", "a.example/p", id="three-slashes"),
    pytest.param(" https://a.exa\tmple/p\n", "a.example/p", id="whitespace"),
    pytest.param("https://[2001:DB8::1]/p", "[2001:db8::1]/p", id="ipv6"),
    pytest.param(
        "https://[2001:db8:0:0:1:0:0:1]:8443/", "[2001:db8::1:0:0:1]:8443/", id="ipv6-zeros"
    ),
    pytest.param("https://[::ffff:192.0.2.1]/", "[::ffff:c000:201]/", id="ipv6-mapped"),
    pytest.param("http://127.1:8080/p", "127.0.0.1:8080/p", id="ipv4-short"),
    pytest.param("http://0x7F.0.0.1/", "127.0.0.1/", id="ipv4-hex"),
    pytest.param("http://2130706433./", "127.0.0.1/", id="ipv4-number"),
]


@pytest.mark.parametrize(("url", "target"), WHATWG_TARGETS)
def test_signature_target_follows_whatwg(url: str, target: str) -> None:
    assert signature_target(url) == target


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("https://a..example/", id="empty-label"),
        pytest.param("https://" + "a" * 64 + ".example/", id="label-over-63"),
        pytest.param("https://" + "bü" * 30 + ".example/", id="idn-label-over-63"),
        pytest.param("https://" + "abc." * 64 + "de/", id="name-over-253"),
        pytest.param("https://./", id="only-a-dot"),
        pytest.param("https://", id="no-host"),
        pytest.param("https://?q", id="no-host-before-query"),
        pytest.param("https://user@/p", id="credentials-only"),
        pytest.param("/hook", id="relative"),
        pytest.param("mailto:a@a.example", id="no-host-scheme"),
        pytest.param("file:///etc/hosts", id="file"),
        pytest.param("https://a.example:65536/", id="port-too-large"),
        pytest.param("https://a.example:8x/", id="port-not-a-number"),
        pytest.param("https://a b.example/", id="space-in-host"),
        pytest.param("https://a<b.example/", id="forbidden-in-host"),
        pytest.param("https://%ff.example/", id="escaped-invalid-utf8"),
        pytest.param("https://\ud800.example/", id="lone-surrogate-host"),
        pytest.param("https://[::1/", id="unclosed-ipv6"),
        pytest.param("https://[::1%25eth0]/", id="ipv6-zone"),
        pytest.param("https://[1.2.3.4]/", id="ipv4-in-brackets"),
        pytest.param("https://1.2.3.256/", id="ipv4-octet-too-large"),
        pytest.param("https://1.2.3.4.5/", id="ipv4-five-parts"),
        pytest.param("https://08/", id="ipv4-bad-octal"),
    ],
)
def test_invalid_urls_raise_the_signature_error(url: str) -> None:
    with pytest.raises(SignatureError):
        signature_target(url)


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
