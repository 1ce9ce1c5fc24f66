"""Throughput of the egress client against a bare aiohttp session, on loopback.

    .venv/bin/python bench/egress.py [--requests 20000] [--rounds 3] [--concurrency 100]
                                      [--quick]

A server in its own process (so it does not share the client's core or event
loop) answers every GET and POST with the same 1 KiB JSON object. Each round
runs the same requests through (a) a bare ``aiohttp.ClientSession`` that reads
and parses the JSON, and (b) ``EgressClient.request``, alternating which goes
first; the medians are reported, since a two-core machine is noisy. Then the
cost of one ``palaestra.protocol.sign`` and ``verify`` on a 1 KiB body.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import timeit
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import orjson
from aiohttp import web

from palaestra.egress import EgressClient, EgressPolicy
from palaestra.protocol import sign, signature_target, verify

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file: see bench._support
from bench._support import HOST, agents_process, parse_args

USER_AGENT = "palaestra-bench/1.0"
REPLY = orjson.dumps({"output": {"text": "x" * 996}, "n": 1})
REQUEST_BODY = orjson.dumps({"taskId": "bench", "input": {"text": "y" * 200}})
assert len(REPLY) == 1024

Call = Callable[[int], Awaitable[bool]]
Run = tuple[float, float, int]  # requests/second, client CPU microseconds/request, failures


async def reply(request: web.BaseRequest) -> web.StreamResponse:
    """The server: answer every request with :data:`REPLY`."""
    await request.read()
    return web.Response(body=REPLY, content_type="application/json")


async def _drive(call: Call, requests: int, concurrency: int) -> Run:
    """Run ``requests`` calls, ``concurrency`` at a time."""
    next_index = 0
    failures = 0

    async def worker() -> None:
        nonlocal next_index, failures
        while next_index < requests:
            index = next_index
            next_index += 1
            if not await call(index):
                failures += 1

    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return requests / wall, cpu / requests * 1e6, failures


def _request(index: int) -> tuple[str, bytes | None]:
    return ("GET", None) if index % 2 == 0 else ("POST", REQUEST_BODY)


async def bare(url: str, requests: int, concurrency: int) -> Run:
    """(a) A bare aiohttp session: GET or POST, then parse the JSON reply."""
    headers = {"User-Agent": USER_AGENT, "Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def call(index: int) -> bool:
            method, body = _request(index)
            async with session.request(method, url, data=body, headers=headers) as response:
                data = await response.json(loads=orjson.loads)
                return response.status == 200 and isinstance(data, dict)

        await _drive(call, 2 * concurrency, concurrency)  # warm up: open the connections
        return await _drive(call, requests, concurrency)


async def egress(url: str, requests: int, concurrency: int) -> Run:
    """(b) The egress client, loopback allowed, same requests."""
    async with EgressClient(EgressPolicy.allowing([f"{HOST}/32"])) as client:

        async def call(index: int) -> bool:
            method, body = _request(index)
            result = await client.request(
                method, url, user_agent=USER_AGENT, deadline=30.0, body=body
            )
            return result.ok and isinstance(result.data, dict)

        await _drive(call, 2 * concurrency, concurrency)
        return await _drive(call, requests, concurrency)


def _signing_costs(number: int) -> tuple[float, float]:
    """Microseconds per ``sign`` and per ``verify`` of a 1 KiB body (best of 5 runs of
    ``number`` calls)."""
    key, stamp = "agent-api-key-0123456789abcdef", 1_767_225_600
    target = signature_target("https://agent.example/dispatch")
    signature = sign(key, stamp, target, REPLY)

    def per_call(statement: Callable[[], object]) -> float:
        return min(timeit.repeat(statement, number=number, repeat=5)) / number * 1e6

    return (
        per_call(lambda: sign(key, stamp, target, REPLY)),
        per_call(lambda: verify(key, target, REPLY, signature, str(stamp), now=stamp)),
    )


async def _rounds(url: str, args: argparse.Namespace) -> None:
    rates: dict[str, list[float]] = {"bare": [], "egress": []}
    cpus: dict[str, list[float]] = {"bare": [], "egress": []}
    contenders = {"bare": bare, "egress": egress}
    for round_number in range(1, args.rounds + 1):
        order = ["bare", "egress"] if round_number % 2 else ["egress", "bare"]
        line = [f"round {round_number}:"]
        for name in order:
            rate, cpu_us, failures = await contenders[name](url, args.requests, args.concurrency)
            if failures:
                raise SystemExit(f"{name}: {failures} of {args.requests} requests failed")
            rates[name].append(rate)
            cpus[name].append(cpu_us)
            line.append(f"{name:6} {rate:6.0f} req/s ({cpu_us:3.0f} us client CPU/req)")
        line.append(f"ratio {rates['egress'][-1] / rates['bare'][-1]:.2f}x")
        print("  ".join(line), flush=True)
    a, b = statistics.median(rates["bare"]), statistics.median(rates["egress"])
    cpu_a, cpu_b = statistics.median(cpus["bare"]), statistics.median(cpus["egress"])
    paired = statistics.median(e / r for e, r in zip(rates["egress"], rates["bare"], strict=True))
    print(f"median:  (a) bare aiohttp {a:.0f} req/s   (b) EgressClient {b:.0f} req/s")
    print(f"ratio:   {b / a:.2f}x of the medians, {paired:.2f}x median of rounds (target >= 0.80x)")
    print(f"client CPU/request: (a) {cpu_a:.0f} us   (b) {cpu_b:.0f} us   ({cpu_a / cpu_b:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000, help="requests per run")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of (a) and (b)")
    parser.add_argument("--concurrency", type=int, default=100, help="requests in flight")
    args = parse_args(parser, {"requests": 300, "rounds": 1, "concurrency": 20})

    with agents_process(reply, spawn=True) as port:
        url = f"http://{HOST}:{port}/agent"
        print(
            f"egress bench: {args.requests} requests x {args.rounds} rounds, "
            f"concurrency {args.concurrency}, {len(REPLY)}-byte JSON replies, "
            "GET/POST alternating, server in a process of its own",
            flush=True,
        )
        asyncio.run(_rounds(url, args))
    sign_us, verify_us = _signing_costs(500 if args.quick else 20_000)
    print(f"protocol.sign:   {sign_us:.2f} us/call (1 KiB body)")
    print(f"protocol.verify: {verify_us:.2f} us/call (1 KiB body)")


if __name__ == "__main__":
    main()
