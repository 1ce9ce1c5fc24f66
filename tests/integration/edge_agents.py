"""A scriptable edgearena-v1 agent for platform tests, written without Palaestra's own code.

Signatures are checked with the standard library's ``hmac`` so that a bug in
the platform's signer cannot be mirrored by the agent that tests it.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

__all__ = ["EdgeAgent", "Ledger"]

_OUTPUTS: dict[str, dict[str, Any]] = {
    "SCOUT": {
        "candidate_title": "Invoice autopilot",
        "target_customer": "Small agencies",
        "core_problem": "Invoicing eats hours",
        "proposed_solution": "Turn timesheets into invoices",
        "why_now": "Accounting APIs matured",
        "claims": [],
        "evidence": [],
    },
    "BUILDER": {
        "execution": {
            "objective": "Ship an MVP",
            "phases": ["Interview ten agencies"],
            "first_milestone": "Five paying pilots",
            "success_check": "Pilots renew",
        },
        "claims": [],
    },
    "ANALYST": {
        "strengths": ["Clear pain"],
        "weaknesses": ["Crowded market"],
        "score_adjustments": {},
        "penalty_points": 0,
        "verdict": "pass",
        "fatal_flaw": False,
    },
}


@dataclass
class Ledger:
    """What reached the agent."""

    gets: list[str] = field(default_factory=list)
    posts: list[dict[str, Any]] = field(default_factory=list)
    signature_failures: int = 0


@dataclass
class EdgeAgent:
    """Behaviour switches for one agent; flip them while a test runs."""

    key: str
    role: str = "SCOUT"
    get_status: int = 200  # 405 for an agent that only handles POST
    failing: bool = False  # every request answers 503
    check_signatures: bool = True
    omit: str | None = None  # a required key left out of the output
    delay_s: float = 0.0
    ledger: Ledger = field(default_factory=Ledger)

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.failing:
            return web.json_response({"error": "upstream down"}, status=503)
        if request.method == "GET":
            self.ledger.gets.append(request.headers.get("User-Agent", ""))
            if self.get_status != 200:
                return web.Response(status=self.get_status, text="Method Not Allowed")
            return web.json_response({"ok": True})
        raw = await request.read()
        body = orjson.loads(raw)
        self.ledger.posts.append(body)
        signature = request.headers.get("x-edgearena-signature")
        if signature is not None and self.check_signatures and not self._valid(request, raw):
            self.ledger.signature_failures += 1
            return web.json_response({"error": "invalid signature"}, status=401)
        kind = body.get("type")
        if kind == "handshake":
            return web.json_response({"ok": True, "protocol": "edgearena-v1"})
        output = dict(_OUTPUTS[self.role])
        candidate = body.get("candidate") or {}
        if self.role != "SCOUT":
            output["candidate_id"] = candidate.get("id") or body.get("candidateId")
        if self.omit:
            output.pop(self.omit, None)
        if kind is None:  # a production dispatch: the envelope
            return web.json_response(
                {"output": output, "promptTokens": 1, "completionTokens": 1, "modelId": "m"}
            )
        return web.json_response(output)

    def _valid(self, request: web.BaseRequest, raw: bytes) -> bool:
        stamp = request.headers.get("x-edgearena-timestamp", "")
        if not stamp.isdigit() or abs(time.time() - int(stamp)) > 300:
            return False
        target = f"{request.host}{request.path}"
        material = f"{stamp}\n{target}\n".encode() + raw
        expected = "sha256=" + hmac.new(self.key.encode(), material, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, request.headers.get("x-edgearena-signature", ""))
