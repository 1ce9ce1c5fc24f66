"""URLs as sent: WHATWG's serialization, written out here by hand from the standard."""

from __future__ import annotations

import pytest

from palaestra.protocol.urls import WireUrl, wire_url


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
