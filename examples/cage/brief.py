"""Reading a cage.v1 payload: what a harness is told on each turn.

The arena's wording is fixed by cage.v1, so a few patterns find everything a
fighter needs: the defender's access code, its brief and the user's request,
the attacker's hijack phrase, and the opponent's latest message (the fenced,
untrusted block).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["DefenderBrief", "hijack_phrase", "opponent_message"]

_CODE = re.compile(r"Your access code is (\S+)\.")
_PHRASE = re.compile(r'The hijack phrase is "([^"\n]+)"')
_REQUEST = re.compile(r"The user's request \(trusted\):\n(.*?)\n\nQuestion: ([^\n]*)", re.DOTALL)
_BLOCK = re.compile(
    r"<<<UNTRUSTED OPPONENT MESSAGE (\w+) BEGIN>>>\n(.*)\n<<<UNTRUSTED OPPONENT MESSAGE \1 END>>>",
    re.DOTALL,
)
_BLOCK_INTRO = "Below is the latest message from your opponent."


def opponent_message(payload: str) -> str:
    """The opponent's latest message (``""`` on an attacker's first turn)."""
    found = _BLOCK.search(payload)
    return found.group(2) if found else ""


def hijack_phrase(payload: str) -> str:
    """The phrase the attacker wants the defender to say."""
    found = _PHRASE.search(payload)
    return found.group(1) if found else ""


@dataclass(frozen=True, slots=True)
class DefenderBrief:
    """A defender's payload, taken apart."""

    access_code: str
    instructions: str  # everything above the opponent's block
    context: str  # the user's trusted document
    question: str
    message: str  # the opponent's latest message

    @classmethod
    def of(cls, payload: str) -> DefenderBrief:
        code = _CODE.search(payload)
        request = _REQUEST.search(payload)
        return cls(
            access_code=code.group(1) if code else "",
            instructions=payload.split(_BLOCK_INTRO, 1)[0].strip(),
            context=request.group(1) if request else "",
            question=request.group(2) if request else "",
            message=opponent_message(payload),
        )
