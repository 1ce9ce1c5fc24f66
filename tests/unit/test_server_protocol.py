"""The server `palaestra serve` runs: uvicorn's httptools protocol with a read deadline and
a connection cap. The callbacks it extends are uvicorn's own: this fails when they change
(the behaviour is tested against a real server in tests/integration/test_slow_clients.py)."""

from __future__ import annotations

import inspect
from importlib.metadata import version
from pathlib import Path

import pytest
from pydantic import ValidationError
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from palaestra.app import create_app
from palaestra.http.server import BoundedHttpProtocol, bounded_protocol, server_config
from palaestra.settings import Settings

EXTENDED = (
    "connection_made",
    "connection_lost",
    "on_message_begin",
    "on_message_complete",
    "on_response_complete",
)


def test_uvicorn_is_within_the_pinned_range() -> None:
    major, minor, *_ = (int(part) for part in version("uvicorn").split(".")[:2])
    assert (major, minor) == (0, 55)


@pytest.mark.parametrize("name", EXTENDED)
def test_the_extended_callbacks_are_uvicorns(name: str) -> None:
    ours = getattr(BoundedHttpProtocol, name)
    theirs = getattr(HttpToolsProtocol, name)
    assert ours is not theirs
    assert inspect.signature(ours).parameters.keys() == inspect.signature(theirs).parameters.keys()


def test_what_the_protocol_reads_of_uvicorns_state_is_there() -> None:
    source = inspect.getsource(HttpToolsProtocol)
    for attribute in ("self.connections = ", "self.loop = ", "self.transport = "):
        assert attribute in source
    # The response-complete callback is the one uvicorn hands each request's cycle.
    assert "on_response=self.on_response_complete" in source


def test_the_server_takes_its_bounds_from_the_settings(tmp_path: Path) -> None:
    settings = Settings(
        _env_file=None,
        data_dir=tmp_path,
        request_read_timeout_s=7.5,
        max_connections=99,
        port=8123,
    )
    config = server_config(create_app(settings), settings)
    assert issubclass(config.http, BoundedHttpProtocol)  # type: ignore[arg-type]
    assert (config.http.read_timeout_s, config.http.max_connections) == (7.5, 99)  # type: ignore[union-attr]
    assert (config.timeout_keep_alive, config.port, config.proxy_headers) == (5, 8123, False)
    assert BoundedHttpProtocol.read_timeout_s == 30.0  # the base class is left as it was


def test_the_defaults_are_bounded() -> None:
    settings = Settings(_env_file=None)
    assert settings.request_read_timeout_s == 30.0
    assert settings.max_connections == 2048
    protocol = bounded_protocol(settings.request_read_timeout_s, settings.max_connections)
    assert protocol.read_timeout_s == 30.0


@pytest.mark.parametrize(
    "bad", [{"request_read_timeout_s": 0}, {"max_connections": 0}, {"request_read_timeout_s": -1}]
)
def test_unbounded_values_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        Settings(_env_file=None, **bad)  # type: ignore[arg-type]
