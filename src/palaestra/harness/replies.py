"""HTTP replies of the harness, and the store that keeps answers for repeated requests."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Protocol

from palaestra.protocol import dumps

__all__ = ["HttpReply", "MemoryReplyStore", "ReplyStore", "error_reply", "json_reply"]


@dataclass(frozen=True, slots=True)
class HttpReply:
    """A JSON reply: status and the serialized body."""

    status: int
    body: bytes
    replayed: bool = False

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def as_replay(self) -> HttpReply:
        return replace(self, replayed=True)


def json_reply(value: Any, status: int = 200) -> HttpReply:
    return HttpReply(status, dumps(value))


def error_reply(status: int, code: str, message: str, **extra: Any) -> HttpReply:
    """Every error the harness sends: ``{"error": <message>, "code": <slug>, ...}``."""
    return HttpReply(status, dumps({"error": message, "code": code, **extra}))


class ReplyStore(Protocol):
    """Where the first answer to a task or turn is kept, keyed by its id.

    The harness stores successful answers only. Implement this protocol to
    share answers between processes (a Redis hash, a database table).
    """

    async def get(self, key: str) -> HttpReply | None: ...

    async def put(self, key: str, reply: HttpReply) -> None: ...


class MemoryReplyStore:
    """The default store: this process's memory, the ``max_entries`` most recent answers."""

    def __init__(self, max_entries: int = 10_000) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self._replies: OrderedDict[str, HttpReply] = OrderedDict()

    def __len__(self) -> int:
        return len(self._replies)

    def __contains__(self, key: object) -> bool:
        return key in self._replies

    async def get(self, key: str) -> HttpReply | None:
        reply = self._replies.get(key)
        if reply is not None:
            self._replies.move_to_end(key)
        return reply

    async def put(self, key: str, reply: HttpReply) -> None:
        self._replies[key] = reply
        self._replies.move_to_end(key)
        while len(self._replies) > self.max_entries:
            self._replies.popitem(last=False)
