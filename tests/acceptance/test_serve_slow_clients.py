"""`palaestra serve` against slow clients: hundreds of half-sent requests are closed within
the read timeout, and the server answers everyone else all the while."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from tests.acceptance.test_serve_restart import ADMIN, client, free_port, palaestra_serve

pytestmark = pytest.mark.asyncio

READ_TIMEOUT_S = 2
SLOW = 300
SENT = [
    b"",  # nothing at all
    b"GET /api/agents HTTP/1.1\r\nHost: x\r\n",  # half a head
    b"POST /api/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Content-Length: 100\r\n\r\n{",  # a head and one byte of its body
]


async def closed_after(reader: asyncio.StreamReader, opened: float) -> tuple[bytes, float]:
    received = await reader.read()  # until the server closes the connection
    return received, time.monotonic() - opened


async def test_half_sent_requests_are_closed_within_the_read_timeout(tmp_path: Path) -> None:
    port = free_port()
    auth = {"Authorization": f"Bearer {ADMIN}"}
    with palaestra_serve(
        tmp_path,
        port,
        secret=Fernet.generate_key().decode(),
        PALAESTRA_MONITOR_ENABLED="false",
        PALAESTRA_REQUEST_READ_TIMEOUT_S=str(READ_TIMEOUT_S),
    ):
        async with client(port) as call:
            slow = []
            for n in range(SLOW):
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(SENT[n % len(SENT)])
                await writer.drain()
                slow.append((reader, writer, time.monotonic()))
            closing = [asyncio.create_task(closed_after(r, t)) for r, _, t in slow]
            # Everyone else is answered while the slow ones hold their connections.
            started = time.monotonic()
            assert (await call("GET", "/healthz"))[0] == 200
            assert (await call("GET", "/api/runs", headers=auth))[0] == 200
            assert time.monotonic() - started < 1
            outcomes = await asyncio.wait_for(asyncio.gather(*closing), READ_TIMEOUT_S + 10)
            for _, writer, _ in slow:
                writer.close()
            # And after them too.
            assert (await call("GET", "/api/runs", headers=auth))[0] == 200
    latest = max(after for _, after in outcomes)
    assert latest < READ_TIMEOUT_S + 2, latest
    silent = [received for received, _ in outcomes[:: len(SENT)]]
    begun = [received for n, (received, _) in enumerate(outcomes) if n % len(SENT)]
    assert silent == [b""] * len(silent)
    assert all(received.startswith(b"HTTP/1.1 408 Request Timeout\r\n") for received in begun)
