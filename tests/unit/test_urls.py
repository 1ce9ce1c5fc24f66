"""URLs as sent: WHATWG's serialization, written out here by hand from the standard."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from palaestra.egress import EgressPolicy
from palaestra.errors import EgressRefused, InvalidUrl, SignatureError
from palaestra.protocol.urls import WireUrl, require_url, url_problem, wire_url


@pytest.mark.parametrize(
    ("url", "href"),
    [
        pytest.param("https://EXAMPLE.com/x", "https://example.com/x", id="host"),
        pytest.param("HTTP://a.example:80", "http://a.example/", id="scheme-port-path"),
        pytest.param(
            "https://Bücher.example:8443/a/../b c/ü?q=1",
            "https://xn--bcher-kva.example:8443/b%20c/%C3%BC?q=1",
            id="idn-dots-utf8",
        ),
        pytest.param(
            "https://a.example/p?q=a b&r=ü&s='x'&t=\"<>`{}^|",
            "https://a.example/p?q=a%20b&r=%C3%BC&s=%27x%27&t=%22%3C%3E`{}^|",
            id="query-set",
        ),
        pytest.param("https://a.example/p?a%20b+c", "https://a.example/p?a%20b+c", id="query-kept"),
        pytest.param("https://a.example/p?", "https://a.example/p?", id="empty-query"),
        pytest.param("https://a.example/p?q#f", "https://a.example/p?q", id="fragment-dropped"),
        pytest.param("https://u:p@a.example/p", "https://a.example/p", id="credentials-dropped"),
        pytest.param("https://[::1]:8443/", "https://[::1]:8443/", id="ipv6"),
        pytest.param("https://a.example./", "https://a.example./", id="root-dot"),
    ],
)
def test_href_is_what_a_browser_sends(url: str, href: str) -> None:
    assert wire_url(url).href == href


def test_parts() -> None:
    assert wire_url("https://A.example:8443/p?q=1#f") == WireUrl(
        "a.example:8443", "/p", "https://a.example:8443/p?q=1"
    )
    assert wire_url("https://a.example:443").host == "a.example"
    assert wire_url("https://a.example").href == "https://a.example/"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        pytest.param("https://a..example/", "the host name 'a..example' has an empty label"),
        pytest.param("https://.example/", "the host name '.example' has an empty label"),
        pytest.param("https://./", "the host name '.' has an empty label"),
        pytest.param(
            "https://" + "a" * 64 + ".example/",
            "the host label '" + "a" * 40 + "…' is 64 characters long, more than 63",
        ),
        pytest.param(
            "https://" + "a." * 127 + "ab/", "the host name is 256 characters long, more than 253"
        ),
        pytest.param("https://a.example:65536/", "the port 65536 is out of range (1-65535)"),
        pytest.param("https://a.example:8o/", "the port '8o' is not a number"),
        pytest.param("https://a.example:00/", "port 0 is not a port a server listens on"),
        pytest.param("https://xn--.example/", "the host label 'xn--' is not an A-label"),
        pytest.param("https://xn--99999999.example/", "the host label 'xn--99999999' is not valid"),
        pytest.param("https://xn--a.example/", "the host label 'xn--a' decodes to '\\x80'"),
        pytest.param("https://a%00.example/", "the host contains '\\x00' (U+0000)"),
        pytest.param("https://a<b.example/", "the host contains '<' (U+003C)"),
        pytest.param("https://\u0661\u0031.example/", "the host label '\u06611' is not allowed"),
        pytest.param("https://[::1/", "the IPv6 address has no closing ']'"),
        pytest.param("https://[::1]:x/", "the port 'x' is not a number"),
        pytest.param("https://256.0.0.1/", "the host '256.0.0.1' is not a valid IPv4 address"),
        pytest.param("mailto:a@example.com", "not an http(s) URL"),
        pytest.param("no scheme", "it is not an absolute URL (scheme://host/path)"),
    ],
)
def test_a_refused_url_is_told_why(url: str, problem: str) -> None:
    assert (url_problem(url) or "").startswith(problem)
    with pytest.raises(SignatureError, match=r"^invalid URL "):
        wire_url(url)
    with pytest.raises(InvalidUrl) as refused:
        require_url("endpoint_url", url)
    assert refused.value.message.startswith(f"endpoint_url is not a valid URL: {problem}")


@pytest.mark.parametrize(
    "url",
    [
        "https://a.example./",  # the root's dot is no empty label
        "https://" + "a" * 63 + ".example/",
        "https://" + "a." * 126 + "a/",  # 253 characters
        "https://b\u00fccher.example/",
        "https://xn--bcher-kva.example/",
        "https://xn--zca.example/",  # ß, kept as written (nontransitional)
        "https://\U0001f4a9.la/",  # UTS #46 allows what IDNA 2008 does not
        "https://a_b.example/",
        "https://a.example:1/",
        "https://a.example:65535/",
    ],
)
def test_a_url_the_dns_can_look_up_is_accepted(url: str) -> None:
    assert url_problem(url) is None
    assert require_url("endpoint_url", f"  {url} ") == url


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=200) | st.text(max_size=40).map(lambda host: f"https://{host}/"))
def test_any_text_is_read_or_refused_and_nothing_else(url: str) -> None:
    problem = url_problem(url)
    if problem is None:
        wire_url(url)
    else:
        assert problem
        with pytest.raises(SignatureError):
            wire_url(url)
    try:
        EgressPolicy().target(url)
    except EgressRefused as exc:
        refusal = exc.message
    else:
        refusal = "none"
    assert refusal
