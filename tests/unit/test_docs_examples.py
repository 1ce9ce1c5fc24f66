"""The worked examples of the agent guides hold: recomputed here, never copied from the code."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from pathlib import Path
from typing import Any

import pytest

from palaestra.protocol import (
    ChallengeReply,
    ChallengeRequest,
    TurnReply,
    TurnRequest,
    parse_agent_request,
    signature_target,
)
from palaestra.protocol.constants import UserAgent
from palaestra.protocol.edgearena import CompletionBody, DispatchPayload, DispatchReply
from palaestra.rules.judge.verdict import Secret, find_secret

AGENTS = Path(__file__).resolve().parents[2] / "docs" / "agents"
EDGEARENA = (AGENTS / "edgearena.md").read_text()
CAGE = (AGENTS / "cage.md").read_text()


def section(text: str, heading: str) -> str:
    """The lines under ``heading`` up to the next heading (a ``#`` inside a fence is not one)."""
    lines = text[text.index(heading) + len(heading) :].splitlines(keepends=True)
    kept, fenced = [], False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            break
        kept.append(line)
    return "".join(kept)


def json_blocks(text: str) -> list[Any]:
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", text, re.DOTALL)]


def example_row(name: str) -> str:
    table = section(EDGEARENA, "### A worked example")
    match = re.search(rf"^\| {re.escape(name)} \| `([^`]*)` \|$", table, re.MULTILINE)
    assert match, name
    return match.group(1)


def test_the_signature_example_is_recomputed_from_its_inputs() -> None:
    key, timestamp = example_row("key"), example_row("timestamp")
    url, body = example_row("URL registered"), example_row("body").encode()
    target = example_row("signed target (host + pathname)")
    assert target == "agent.example.com/hook"  # host and path: no scheme, no query
    assert signature_target(url) == target
    material = f"{timestamp}\n{target}\n".encode() + body
    expected = "sha256=" + hmac.new(key.encode(), material, hashlib.sha256).hexdigest()
    assert example_row("signature") == expected


def test_the_signature_snippet_runs_and_agrees_with_the_table() -> None:
    (snippet,) = re.findall(
        r"```python\n(.*?)```", section(EDGEARENA, "### A worked example"), re.S
    )
    namespace: dict[str, Any] = {}
    exec(compile(snippet, "edgearena.md", "exec"), namespace)  # noqa: S102 (our own docs)
    assert namespace["signature"] == example_row("signature")
    assert namespace["body"] == example_row("body").encode()


def test_the_request_examples_are_messages_the_protocol_parses() -> None:
    handshake, scout, build = (
        json_blocks(section(EDGEARENA, "### Handshake"))[0],
        *json_blocks(section(EDGEARENA, "### Simulation")),
    )
    assert parse_agent_request(handshake).wire() == handshake
    assert parse_agent_request(scout).wire() == scout
    assert parse_agent_request(build).wire() == build
    dispatch, reply = json_blocks(section(EDGEARENA, "### Dispatch"))
    assert isinstance(parse_agent_request(dispatch), DispatchPayload)
    assert DispatchPayload.parse(dispatch).wire() == dispatch
    DispatchReply.parse(reply)
    (completion,) = json_blocks(section(EDGEARENA, "### Async callback"))
    assert CompletionBody.parse(completion).task_id == dispatch["taskId"]


def test_the_cage_examples_are_messages_the_protocol_parses() -> None:
    _, challenge, echo = json_blocks(section(CAGE, "## Ownership proof"))
    assert ChallengeRequest.parse(challenge).nonce == ChallengeReply.parse(echo).nonce
    turn, reply = json_blocks(section(CAGE, "## Turns"))
    assert TurnRequest.parse(turn).turn == 2
    TurnReply.parse(reply)


def test_the_evidence_example_is_what_the_judge_finds() -> None:
    text = section(CAGE, "### The evidence")
    reply = re.search(r"For the reply `([^`]+)`", text)
    code = re.search(r"access code `([^`]+)`", text)
    assert reply
    assert code
    (shown,) = json_blocks(text)
    found = [e.as_dict() for e in find_secret(reply.group(1), code.group(1), Secret.ACCESS_CODE)]
    assert found == shown


@pytest.mark.parametrize("status", ["PENDING", "ACTIVE", "DEGRADED", "PROBATION", "SUSPENDED"])
def test_the_status_machine_text_asks_for_the_generated_diagram(status: str) -> None:
    machine = section(EDGEARENA, "## The status machine")
    assert "<!-- generated: status-machine -->" in machine
    assert status in machine


def test_the_request_table_names_the_user_agents_the_platform_sends() -> None:
    table = section(EDGEARENA, "## The requests, one by one")
    rows = dict(re.findall(r"^\| ([a-z ()-]+) \| `(?:GET|POST)` \| `([^`]+)` \|", table, re.M))
    assert rows == {
        "pre-registration probe": UserAgent.PING,
        "liveness (health ping)": UserAgent.HEALTH,
        "reachability check": UserAgent.VERIFY,
        "handshake": UserAgent.HANDSHAKE,
        "simulation": UserAgent.VERIFY_PAYLOAD,
        "signed simulation": UserAgent.VERIFY_DISPATCH,
        "dispatch": UserAgent.DISPATCH,
    }
