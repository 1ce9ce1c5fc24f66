"""A SCOUT written the way agents built for Edge Arena usually are: plain aiohttp, no SDK.

    EDGE_AGENT_KEY=<key> python examples/plain_scout.py --port 9002
    palaestra check http://127.0.0.1:9002/agent --role SCOUT --key <key> --allow 127.0.0.0/8

It imports nothing from Palaestra and follows the published docs as a third
party reads them: it answers GETs with 200, echoes the handshake, treats both
simulation variants alike without checking their signature, and verifies the
HMAC on every production dispatch over the ``Host`` header and the path it was
called on (as an Express agent does), answering 401 to a bad signature and 409
to a taskId it has seen. Like many such agents it does not check the
timestamp's ±300 s window, which ``palaestra check`` reports as a warning.

``--trust-signatures`` makes a sloppier agent that verifies nothing: the
platform still admits it, with the warning "accepts forged signatures".
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
from collections.abc import Callable
from typing import Any

from aiohttp import web

__all__ = ["SCOUT_OUTPUT", "create_app"]

#: What this scout proposes, whatever the goal: it says plainly that nothing was researched.
SCOUT_OUTPUT: dict[str, Any] = {
    "candidate_title": "Shared inbox triage for two-person accounting firms",
    "target_customer": "Accounting firms with one to three partners",
    "core_problem": "Client emails with documents get lost among newsletters and reminders",
    "proposed_solution": "An inbox filter that files client documents by client and deadline",
    "why_now": "Mail providers now offer stable APIs for labels and attachments",
    "claims": [{"type": "market", "text": "Small firms receive hundreds of client emails a week"}],
    "evidence": [{"kind": "none", "summary": "A fixed example, not researched"}],
}
_SIMULATIONS = {"scout_task", "build_task", "analyst_task"}


def create_app(key: str | Callable[[], str], *, verify_signatures: bool = True) -> web.Application:
    """The agent's aiohttp application, checking production signatures with ``key`` (or the
    key it returns when called: the key is only known once the agent is registered)."""
    current_key = key if callable(key) else lambda: key
    seen: set[str] = set()

    async def liveness(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def work(request: web.Request) -> web.Response:
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            return web.json_response({"error": "body is not JSON"}, status=400)
        if not isinstance(body, dict):
            return web.json_response({"error": "body is not an object"}, status=400)
        if body.get("type") == "handshake":
            return web.json_response({"ok": True, "protocol": "edgearena-v1"})
        if body.get("type") in _SIMULATIONS:
            return web.json_response(SCOUT_OUTPUT)
        if verify_signatures and not _signed(request, raw, current_key()):
            return web.json_response({"error": "Invalid signature"}, status=401)
        task_id = str(body.get("taskId", ""))
        if task_id in seen:
            return web.json_response({"error": f"task {task_id} already received"}, status=409)
        seen.add(task_id)
        return web.json_response(
            {
                "output": SCOUT_OUTPUT,
                "promptTokens": 0,
                "completionTokens": 0,
                "modelId": "plain-scout-fixed",
            }
        )

    app = web.Application()
    app.router.add_get("/{tail:.*}", liveness)
    app.router.add_post("/{tail:.*}", work)
    return app


def _signed(request: web.Request, raw: bytes, key: str) -> bool:
    """HMAC-SHA256 of ``timestamp\\nhost+pathname\\nbody``, as the docs give it."""
    signature = request.headers.get("x-edgearena-signature", "")
    timestamp = request.headers.get("x-edgearena-timestamp", "")
    target = request.headers.get("Host", "") + request.raw_path.split("?", 1)[0]
    material = f"{timestamp}\n{target}\n".encode() + raw
    expected = "sha256=" + hmac.new(key.encode(), material, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9002)
    parser.add_argument(
        "--trust-signatures", action="store_true", help="verify no signature at all"
    )
    args = parser.parse_args()
    key = os.environ.get("EDGE_AGENT_KEY", "")
    app = create_app(key, verify_signatures=not args.trust_signatures)
    web.run_app(app, host=args.host, port=args.port, print=None)


if __name__ == "__main__":
    main()
