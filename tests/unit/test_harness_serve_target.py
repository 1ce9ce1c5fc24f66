"""What ``palaestra agent serve module:attribute`` serves."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest
import typer

from palaestra.cli.agent import load_app
from palaestra.harness import Agent, AgentApp, AgentSettings


@pytest.fixture
def module() -> Iterator[types.ModuleType]:
    fake = types.ModuleType("palaestra_serve_target")
    sys.modules[fake.__name__] = fake
    yield fake
    del sys.modules[fake.__name__]


def test_an_agent_is_served_as_its_app(module: types.ModuleType) -> None:
    module.agent = Agent(settings=AgentSettings())  # type: ignore[attr-defined]
    assert isinstance(load_app(f"{module.__name__}:agent"), AgentApp)


def test_the_attribute_defaults_to_app(module: types.ModuleType) -> None:
    app = Agent(settings=AgentSettings()).app()
    module.app = app  # type: ignore[attr-defined]
    assert load_app(module.__name__) is app


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("palaestra_no_such_module:app", "cannot import palaestra_no_such_module"),
        ("palaestra_serve_target:missing", "has no attribute 'missing'"),
        ("palaestra_serve_target:number", "is not an ASGI application"),
        (":app", "expected module:attribute"),
    ],
)
def test_bad_targets_are_reported(
    module: types.ModuleType, target: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    module.number = 42  # type: ignore[attr-defined]
    with pytest.raises(typer.Exit) as raised:
        load_app(target)
    assert raised.value.exit_code == 2
    assert message in capsys.readouterr().err
