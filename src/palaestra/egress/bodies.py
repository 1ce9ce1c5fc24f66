"""Reading a reply's body under the cap: decompressed here, so the cap counts what it becomes.

A compression bomb is inflated a chunk at a time, at most up to the cap, and
a connection left mid-body never goes back to the pool.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import aiohttp

__all__ = ["TooLarge", "let_go", "read_capped", "read_start"]


class TooLarge(Exception):
    """The body passed the cap."""


async def read_capped(response: aiohttp.ClientResponse, cap: int) -> bytes:
    """Read the body, decompressing it here, and stop as soon as it passes ``cap``."""
    declared = response.content_length
    encoding = _encoding(response)
    if declared is not None and encoding in ("", "identity"):
        if declared <= cap:
            return await response.read()  # the parser stops at the declared length
        raise TooLarge
    decoder = _decoder(encoding)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        data = decoder(chunk, cap - size + 1) if decoder else chunk
        size += len(data)
        chunks.append(data)
        if size > cap:
            raise TooLarge
    return b"".join(chunks)


async def read_start(response: aiohttp.ClientResponse, cap: int) -> bytes:
    """At most the first ``cap`` bytes of the body, decompressed, for a reason line.

    The status is the verdict here, so the body cannot change it: one that breaks
    off or is not what its Content-Encoding says leaves what was decoded before
    the fault. Reading stops at ``cap``; a connection left mid-body is closed.
    """
    decoder = _decoder(_encoding(response))
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in response.content.iter_any():
            data = decoder(chunk, cap - size) if decoder else chunk
            size += len(data)
            chunks.append(data)
            if size >= cap:
                break
    except (aiohttp.ClientPayloadError, zlib.error):
        pass
    let_go(response)
    return b"".join(chunks)[:cap]


def let_go(response: aiohttp.ClientResponse) -> None:
    """Close the connection unless its body has arrived whole, so that a connection
    left mid-body never goes back to the pool for another call."""
    if not response.content.is_eof():
        response.close()


def _encoding(response: aiohttp.ClientResponse) -> str:
    return response.headers.get("Content-Encoding", "").strip().lower()


def _decoder(encoding: str) -> Callable[[bytes, int], bytes] | None:
    if encoding in ("gzip", "x-gzip"):
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding == "deflate":
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)  # zlib or gzip header, auto-detected
    else:
        return None

    def decode(chunk: bytes, limit: int) -> bytes:
        # max_length bounds the memory a bomb can claim: at most ``limit`` bytes per chunk.
        return inflater.decompress(chunk, max(limit, 1))

    return decode
