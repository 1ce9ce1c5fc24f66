"""The one edgearena-v1 signer (``protocol.hmac_signer``): the headers it makes, checked
against signatures computed here with the stdlib; and the one list of their names, which no
other module of the platform spells out."""

from __future__ import annotations

import ast
import hashlib
import hmac
from pathlib import Path

import pytest

import palaestra
from palaestra.clock import FrozenClock
from palaestra.errors import SignatureError
from palaestra.protocol import (
    SIGNATURE_HEADER,
    SIGNED_HEADERS,
    TASK_ID_HEADER,
    TIMESTAMP_HEADER,
    SignedHeaders,
    hmac_signer,
    signed_headers,
    verify,
)

KEY = "ea_live_one-signer"
URL = "https://agent.example:8443/hook?x=1"
TARGET = "agent.example:8443/hook"
BODY = b'{"taskId":"t-1","phase":"SCOUT"}'


def expected(key: str, timestamp: int, target: str, body: bytes) -> str:
    material = f"{timestamp}\n{target}\n".encode() + body
    return "sha256=" + hmac.new(key.encode(), material, hashlib.sha256).hexdigest()


def test_the_list_is_the_three_headers_of_the_seed_in_the_order_sent() -> None:
    assert SIGNED_HEADERS == (
        "x-edgearena-signature",
        "x-edgearena-timestamp",
        "x-edgearena-task-id",
    )
    assert (SIGNATURE_HEADER, TIMESTAMP_HEADER, TASK_ID_HEADER) == SIGNED_HEADERS


def test_the_signer_makes_the_listed_headers() -> None:
    clock = FrozenClock(1_767_225_600.75)
    headers = hmac_signer(KEY, clock, "t-1")(URL, BODY)
    assert list(headers) == list(SIGNED_HEADERS)
    assert headers == {
        SIGNATURE_HEADER: expected(KEY, 1_767_225_600, TARGET, BODY),
        TIMESTAMP_HEADER: "1767225600",  # whole seconds, floored
        TASK_ID_HEADER: "t-1",
    }


def test_without_a_task_id_there_is_no_task_id_header() -> None:
    headers = hmac_signer(KEY, FrozenClock(42.0))(URL, b"")
    assert headers == {SIGNATURE_HEADER: expected(KEY, 42, TARGET, b""), TIMESTAMP_HEADER: "42"}


def test_each_request_is_stamped_when_it_is_signed() -> None:
    clock = FrozenClock(1_000.0)
    sign = hmac_signer(KEY, clock, "t")
    first = sign(URL, BODY)
    clock.advance(61)
    second = sign(URL, BODY)
    assert (first[TIMESTAMP_HEADER], second[TIMESTAMP_HEADER]) == ("1000", "1061")
    assert second[SIGNATURE_HEADER] == expected(KEY, 1061, TARGET, BODY)
    # Another endpoint of the same signer: its own host+pathname.
    other = sign("http://127.0.0.1:9000/a/../b", BODY)
    assert other[SIGNATURE_HEADER] == expected(KEY, 1061, "127.0.0.1:9000/b", BODY)


def test_it_makes_what_signed_headers_makes_byte_for_byte() -> None:
    made = hmac_signer(KEY, FrozenClock(1_700_000_000.0), "t-9")(URL, BODY)
    assert made == signed_headers(KEY, URL, BODY, 1_700_000_000, "t-9").as_dict()
    signature = expected(KEY, 1_700_000_000, TARGET, BODY)
    assert made == SignedHeaders(signature, 1_700_000_000, "t-9").as_dict()


def test_what_it_signs_verifies_and_a_changed_byte_does_not() -> None:
    headers = hmac_signer(KEY, FrozenClock(5_000.0), "t")(URL, BODY)
    args = (headers[SIGNATURE_HEADER], headers[TIMESTAMP_HEADER], 5_010.0)
    assert verify(KEY, TARGET, BODY, *args) == 5_000
    with pytest.raises(SignatureError):
        verify(KEY, TARGET, BODY + b" ", *args)


def test_the_key_is_not_in_what_the_signer_shows() -> None:
    signer = hmac_signer(KEY, FrozenClock(), "t")
    assert KEY not in repr(signer)
    assert all(KEY not in value for value in signer(URL, BODY).values())


#: Where the header names may be written out: the protocol's list itself.
_LIST = Path(palaestra.__file__).parent / "protocol" / "signing.py"


def _spelled_out(path: Path) -> list[str]:
    names = {name.lower() for name in SIGNED_HEADERS}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.name}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.strip().lower() in names
    ]


def test_no_module_but_the_protocols_list_spells_out_a_header_name() -> None:
    """A header added to the list reaches every sender: none has a list of its own."""
    root = Path(palaestra.__file__).parent
    found = [
        where
        for path in sorted(root.rglob("*.py"))
        if path != _LIST
        for where in _spelled_out(path)
    ]
    assert found == []
    assert _spelled_out(_LIST)  # the guard reads what it should
