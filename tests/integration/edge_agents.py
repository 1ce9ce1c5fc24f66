"""A scriptable edgearena-v1 agent for platform tests, written without Palaestra's own code.

Signatures are checked, and async completions signed, with the standard
library's ``hmac`` so that a bug in the platform's signer cannot be mirrored
by the agent that tests it. Besides failing at will, an agent can stall its
dispatches past the deadline, break the schema, or answer 202 and deliver
its output through the completion callback.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson
from aiohttp import web

__all__ = ["EdgeAgent", "Ledger", "sign_completion"]

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
    "VERIFY": {
        "evidence_assessments": [],
        "claim_assessments": [],
        "evidence_quality_score": 70,
        "claim_coverage_score": 60,
        "overall_confidence": "medium",
        "red_flags": [],
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


def sign_completion(key: str, public_url: str, task_id: str, raw: bytes, stamp: int) -> str:
    """The agent's signature of a completion, over the platform's public host and path."""
    parts = urlsplit(public_url.rstrip("/") + f"/api/agent-tasks/{task_id}/complete")
    material = f"{stamp}\n{parts.netloc}{parts.path}\n".encode() + raw
    return "sha256=" + hmac.new(key.encode(), material, hashlib.sha256).hexdigest()


@dataclass
class Ledger:
    """What reached the agent."""

    gets: list[str] = field(default_factory=list)
    posts: list[dict[str, Any]] = field(default_factory=list)
    signature_failures: int = 0
    #: The taskId of every production dispatch received, repeats included.
    task_ids: list[str] = field(default_factory=list)
    #: Production dispatches whose signature or task-id header was wrong or missing.
    bad_dispatches: int = 0
    #: (taskId, HTTP status, body) of each completion callback the agent made.
    callbacks: list[tuple[str, int, Any]] = field(default_factory=list)


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
    dispatch_delay_s: float = 0.0  # production dispatches only: a stall past the deadline
    defer_to: str | None = None  # answer dispatches 202, then call back this platform URL
    public_url: str | None = None  # what callbacks are signed over (default: defer_to)
    callback_delay_s: float = 0.0
    reply_status: int = 200  # the status of a synchronous reply (202 carries the envelope too)
    tokens: tuple[Any, Any] = (1, 1)  # the envelope's promptTokens and completionTokens
    simulation_pad: int = 0  # bytes of padding (an extra key) in a simulation's reply
    ledger: Ledger = field(default_factory=Ledger)
    _callbacks: set[asyncio.Task[None]] = field(default_factory=set, repr=False)

    async def __call__(self, request: web.BaseRequest) -> web.StreamResponse:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.failing:
            if request.method == "POST":
                self._note_dispatch(request, await request.read())
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
        self._note_dispatch(request, raw)
        if kind == "handshake":
            return web.json_response({"ok": True, "protocol": "edgearena-v1"})
        if kind is None and self.dispatch_delay_s:
            await asyncio.sleep(self.dispatch_delay_s)
        output = dict(_OUTPUTS["VERIFY" if body.get("phase") == "VERIFY" else self.role])
        candidate = body.get("candidate") or {}
        if self.role != "SCOUT":
            output["candidate_id"] = candidate.get("id") or body.get("candidateId")
        if self.omit:
            output.pop(self.omit, None)
        if kind is None:  # a production dispatch: the envelope
            prompt, completion = self.tokens
            envelope = {
                "output": output,
                "promptTokens": prompt,
                "completionTokens": completion,
                "modelId": "m",
            }
            if self.defer_to is not None:
                job = asyncio.create_task(self._call_back(str(body["taskId"]), envelope))
                self._callbacks.add(job)
                job.add_done_callback(self._callbacks.discard)
                return web.json_response({"queued": True}, status=202)
            return web.json_response(envelope, status=self.reply_status)
        if self.simulation_pad:
            output["pad"] = "x" * self.simulation_pad
        return web.json_response(output)

    def _note_dispatch(self, request: web.BaseRequest, raw: bytes) -> None:
        """Every production dispatch is counted, and its signature checked, whatever follows."""
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return
        if not isinstance(body, dict) or "type" in body or "taskId" not in body:
            return
        self.ledger.task_ids.append(str(body["taskId"]))
        if not self._valid_dispatch(request, raw, body):
            self.ledger.bad_dispatches += 1

    def _valid_dispatch(self, request: web.BaseRequest, raw: bytes, body: dict[str, Any]) -> bool:
        return (
            request.headers.get("x-edgearena-signature") is not None
            and self._valid(request, raw)
            and request.headers.get("x-edgearena-task-id") == body.get("taskId")
        )

    async def _call_back(self, task_id: str, envelope: dict[str, Any]) -> None:
        """POST the completion, retrying while the platform is unreachable (it may restart)."""
        assert self.defer_to is not None
        await asyncio.sleep(self.callback_delay_s)
        raw = orjson.dumps({"taskId": task_id, **envelope})
        url = f"{self.defer_to.rstrip('/')}/api/agent-tasks/{task_id}/complete"
        give_up = time.monotonic() + 60
        async with aiohttp.ClientSession() as session:
            while True:
                stamp = int(time.time())
                headers = {
                    "Content-Type": "application/json",
                    "x-edgearena-timestamp": str(stamp),
                    "x-edgearena-signature": sign_completion(
                        self.key, self.public_url or self.defer_to, task_id, raw, stamp
                    ),
                }
                try:
                    async with session.post(url, data=raw, headers=headers) as response:
                        answer = await response.json(content_type=None)
                        self.ledger.callbacks.append((task_id, response.status, answer))
                        return
                except aiohttp.ClientConnectionError:
                    if time.monotonic() > give_up:
                        raise
                    await asyncio.sleep(0.2)

    async def settle(self) -> None:
        """Wait for the callbacks in flight."""
        while self._callbacks:
            await asyncio.gather(*self._callbacks, return_exceptions=True)

    def _valid(self, request: web.BaseRequest, raw: bytes) -> bool:
        stamp = request.headers.get("x-edgearena-timestamp", "")
        if not stamp.isdigit() or abs(time.time() - int(stamp)) > 300:
            return False
        target = f"{request.host}{request.path}"
        material = f"{stamp}\n{target}\n".encode() + raw
        expected = "sha256=" + hmac.new(self.key.encode(), material, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, request.headers.get("x-edgearena-signature", ""))
