"""JSON on the wire: parsing, and JavaScript-style lines for what does not parse."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from palaestra.errors import ProtocolError
from palaestra.protocol import InvalidJson, dumps, loads
from tests.unit.strategies import json_values as any_json

END = "Unexpected end of JSON input"
TOKEN = re.compile(r"\AUnexpected token '(.)' in JSON at position (\d+)\Z", re.DOTALL)


def error_of(raw: bytes | str) -> str:
    with pytest.raises(InvalidJson) as caught:
        loads(raw)
    assert caught.value.message == str(caught.value)
    return str(caught.value)


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (b"{}", {}),
        (b"[]", []),
        (b'{"ok": true, "protocol": "edgearena-v1"}', {"ok": True, "protocol": "edgearena-v1"}),
        (b' \n\t{"a": [1, 2.5, null, false]}\r\n ', {"a": [1, 2.5, None, False]}),
        (b"null", None),
        (b"0", 0),
        (b"-12.5e3", -12500.0),
        (b'"caf\xc3\xa9 \xf0\x9f\x98\x80"', "café 😀"),
        (b'"\\u00e9\\ud83d\\ude00"', "é😀"),
        (b"18446744073709551615", 18446744073709551615),
        ('{"nonce": "9f2c"}', {"nonce": "9f2c"}),
    ],
)
def test_loads_parses_valid_json(raw: bytes | str, value: Any) -> None:
    assert loads(raw) == value


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (b'\xef\xbb\xbf{"output": {}}', {"output": {}}),
        (b"\xef\xbb\xbf []", []),
        ('\ufeff{"ok": true}', {"ok": True}),
    ],
)
def test_one_leading_byte_order_mark_is_skipped(raw: bytes | str, value: Any) -> None:
    assert loads(raw) == value


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"\xef\xbb\xbf", END),
        (b"\xef\xbb\xbf<html>", "Unexpected token '<' in JSON at position 0"),
        ('\ufeff{"a": x}', "Unexpected token 'x' in JSON at position 6"),
    ],
)
def test_after_a_byte_order_mark_errors_count_from_the_document(
    raw: bytes | str, message: str
) -> None:
    assert error_of(raw) == message


def test_dumps_is_compact_utf8() -> None:
    assert dumps({"a": [1, "é"], "b": None}) == '{"a":[1,"é"],"b":null}'.encode()
    assert loads(dumps({"x": {"y": [True, 1.5]}})) == {"x": {"y": [True, 1.5]}}


def test_invalid_json_is_a_protocol_error() -> None:
    assert issubclass(InvalidJson, ProtocolError)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"<html>", "Unexpected token '<' in JSON at position 0"),
        (b"<!DOCTYPE html><html></html>", "Unexpected token '<' in JSON at position 0"),
        ("<html>", "Unexpected token '<' in JSON at position 0"),
        (b"ok", "Unexpected token 'o' in JSON at position 0"),
        (b"  Internal Server Error", "Unexpected token 'I' in JSON at position 2"),
        (b'{"a": 1 x}', "Unexpected token 'x' in JSON at position 8"),
        (b'{"a" 1}', "Unexpected token '1' in JSON at position 5"),
        (b"[1,,2]", "Unexpected token ',' in JSON at position 3"),
        (b"[1 2]", "Unexpected token '2' in JSON at position 3"),
        (b"true x", "Unexpected token 'x' in JSON at position 5"),
        (b'{"a":1} {}', "Unexpected token '{' in JSON at position 8"),
        (b"{,}", "Unexpected token ',' in JSON at position 1"),
        (b"01", "Unexpected token '0' in JSON at position 0"),
    ],
)
def test_unexpected_token_names_the_character_and_its_position(
    raw: bytes | str, message: str
) -> None:
    assert error_of(raw) == message


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"[1,2,]", "Unexpected token ']' in JSON at position 5"),
        (b'{"a":1,}', "Unexpected token '}' in JSON at position 7"),
        (b"[1, 2,  \n ]", "Unexpected token ']' in JSON at position 10"),
        (b'{"a": [1,], "b": 2}', "Unexpected token ']' in JSON at position 9"),
    ],
)
def test_trailing_comma_reports_the_next_token(raw: bytes, message: str) -> None:
    assert error_of(raw) == message


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"NaN", "Unexpected token 'N' in JSON at position 0"),
        (b"[NaN]", "Unexpected token 'N' in JSON at position 1"),
        (b'{"score": NaN}', "Unexpected token 'N' in JSON at position 10"),
        (b"Infinity", "Unexpected token 'I' in JSON at position 0"),
        (b"-Infinity", "Unexpected token 'I' in JSON at position 1"),
    ],
)
def test_nan_and_infinity_are_rejected(raw: bytes, message: str) -> None:
    assert error_of(raw) == message


@pytest.mark.parametrize(
    "raw",
    [b"", b" ", b"\n\t\r ", "", b'{"a": 1', b"[1,2", b"tru", b"nul", b'{"a": "abc', b"-", b"[1,2,"],
)
def test_empty_or_truncated_input_is_unexpected_end(raw: bytes | str) -> None:
    assert error_of(raw) == END


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        # Positions count characters, not UTF-8 bytes.
        ('{"é": 1 x}'.encode(), "Unexpected token 'x' in JSON at position 8"),
        ('{"é": 1 x}', "Unexpected token 'x' in JSON at position 8"),
        ('["日本語", 1 2]'.encode(), "Unexpected token '2' in JSON at position 10"),
        ('{"é":1,}'.encode(), "Unexpected token '}' in JSON at position 7"),
        ('["é", 1,]'.encode(), "Unexpected token ']' in JSON at position 8"),
        ("é", "Unexpected token 'é' in JSON at position 0"),
    ],
)
def test_positions_after_non_ascii_text(raw: bytes | str, message: str) -> None:
    assert error_of(raw) == message


@pytest.mark.parametrize(
    "raw",
    [b"\xff", b'"\xff"', b'{"a": "\xc3"}', b"[1, 2] \xfe", b"\xef\xbb{}", b"\x00"],
)
def test_invalid_utf8_is_invalid_json_not_a_crash(raw: bytes) -> None:
    message = error_of(raw)
    assert message == END or TOKEN.match(message)


@pytest.mark.parametrize("raw", ["\ud800", '{"a": "\udfff"}', "[1, 2]\ud83d"])
def test_lone_surrogates_in_text_are_invalid_json_not_a_crash(raw: str) -> None:
    message = error_of(raw)
    assert message == END or TOKEN.match(message)


def test_escaped_lone_surrogate_is_rejected() -> None:
    assert error_of(b'"\\ud800"') == "Unexpected token '\\' in JSON at position 1"


# --- properties --------------------------------------------------------------------------------

json_values = any_json(text_size=10, key_size=6, width=4, max_leaves=12)


@st.composite
def damaged_documents(draw: st.DrawFn) -> bytes:
    """A valid document with a few characters inserted, deleted or cut off."""
    text = json.dumps(draw(json_values), ensure_ascii=draw(st.booleans()))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        match draw(st.sampled_from(["insert", "delete", "cut"])):
            case "insert":
                text = text[:at] + draw(st.sampled_from(list(',:[]{}"x0 \\é😀'))) + text[at:]
            case "delete":
                text = text[:at] + text[at + 1 :]
            case "cut":
                text = text[:at]
    return text.encode()


def check_parse_or_error(raw: bytes) -> None:
    try:
        loads(raw)
    except InvalidJson as exc:
        message = str(exc)
        token = TOKEN.match(message)
        assert message == END or token, message
        if token:
            # The named character really is at the named position.
            text = raw.decode("utf-8", errors="replace")
            position = int(token.group(2))
            assert position < len(text)
            assert text[position] == token.group(1)


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=40))
@example(raw=b"")
@example(raw=b"<html>")
@example(raw=b"\xff\xfe")
def test_arbitrary_bytes_parse_or_give_a_javascript_line(raw: bytes) -> None:
    check_parse_or_error(raw)


@settings(max_examples=150, deadline=None)
@given(raw=damaged_documents())
@example(raw='{"é": 1 x}'.encode())
def test_damaged_documents_parse_or_give_a_javascript_line(raw: bytes) -> None:
    check_parse_or_error(raw)


@settings(max_examples=60, deadline=None)
@given(value=json_values, ensure_ascii=st.booleans())
def test_garbage_after_a_document_is_named_at_its_character_position(
    value: Any, ensure_ascii: bool
) -> None:
    text = json.dumps(value, ensure_ascii=ensure_ascii)
    expected = f"Unexpected token 'x' in JSON at position {len(text) + 1}"
    assert error_of(f"{text} x".encode()) == expected
    assert error_of(f"{text} x") == expected


@settings(max_examples=60, deadline=None)
@given(items=st.lists(json_values, min_size=1, max_size=4), gap=st.sampled_from(["", " ", "\n  "]))
def test_trailing_comma_is_named_at_the_closing_bracket(items: list[Any], gap: str) -> None:
    text = json.dumps(items, ensure_ascii=False)[:-1] + "," + gap + "]"
    assert error_of(text.encode()) == f"Unexpected token ']' in JSON at position {len(text) - 1}"


@settings(max_examples=60, deadline=None)
@given(value=json_values)
def test_dumps_then_loads_round_trips(value: Any) -> None:
    assert loads(dumps(value)) == value
