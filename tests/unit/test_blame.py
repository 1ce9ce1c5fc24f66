"""Whose fault a failed cage.v1 move is: every error class the referee can meet, and its side."""

from __future__ import annotations

import ssl
import zlib

import aiohttp
import pytest
from cryptography.fernet import InvalidToken
from sqlalchemy.exc import OperationalError

from palaestra.engine.cage.referee import Blame, blame
from palaestra.errors import ConfigurationError, EgressRefused, EntrantMisconfigured, StoreClosed
from palaestra.providers import ProviderFailed

ENTRANTS = [
    # calling it: its name, address, TLS, server, compression
    UnicodeError("encoding with 'idna' codec failed (UnicodeError: label empty or too long)"),
    aiohttp.ClientConnectionError("connection reset"),
    aiohttp.InvalidURL("https://a..com/"),
    ConnectionRefusedError(111, "Connection refused"),
    TimeoutError(),
    ssl.SSLCertVerificationError("certificate verify failed"),
    zlib.error("incorrect header check"),
    EgressRefused("destination 10.0.0.1 is private"),
    # its model provider, and its owner's configuration
    ProviderFailed("model provider failed: External agent responded with 500"),
    EntrantMisconfigured("fighter f1 has no model provider"),
]
ARENAS = [
    OperationalError("UPDATE turns", {}, Exception("database is locked")),
    StoreClosed(),
    InvalidToken(),  # a key the arena sealed and cannot open
    ConfigurationError("the house model is not configured"),
    KeyError("payload"),  # a bug in the arena's own code
]


@pytest.mark.parametrize("error", ENTRANTS, ids=lambda e: type(e).__name__)
def test_an_entrants_own_failure_is_its_failed_turn(error: BaseException) -> None:
    assert blame(error, house=False) is Blame.ENTRANT


@pytest.mark.parametrize("error", ENTRANTS, ids=lambda e: type(e).__name__)
def test_every_failure_of_the_house_is_the_arenas(error: BaseException) -> None:
    assert blame(error, house=True) is Blame.ARENA


@pytest.mark.parametrize("error", ARENAS, ids=lambda e: type(e).__name__)
def test_the_arenas_own_failure_voids(error: BaseException) -> None:
    assert blame(error, house=False) is Blame.ARENA
