"""What of a failure's reason is shown, and to whom.

A reason line (``spec/SCHEMAS.md``) can carry what an agent sent: the start of
an error body, a character of a broken JSON document, a validation message
naming its output. An agent that answers with a connection string in its
error body would have it published wherever the line is shown. So:

- everyone sees :func:`public_reason`: the failure's kind and status
  (``External agent responded with 400``, ``External agent unreachable: dns``,
  ``Invalid JSON``), with the arena's own words before it (``not reached:``,
  ``model provider failed:``), and nothing the agent sent;
- the agent's owner and the admin see :func:`owner_reason`: the whole line,
  with obvious secrets redacted (credentials in URLs, bearer tokens,
  ``password=``/``key=`` pairs and their JSON forms, well-known key shapes,
  Palaestra's own tokens) and capped at :data:`REASON_CAP` characters.

Pure: tested by tables in ``tests/unit/test_reasons.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

__all__ = ["PUBLIC_FALLBACK", "REASON_CAP", "REDACTED", "owner_reason", "public_reason", "redact"]

#: The most of a reason line an owner is shown; the line is cut past it.
REASON_CAP: Final = 500
REDACTED: Final = "[redacted]"
#: What the public is shown of a reason that has no known kind.
PUBLIC_FALLBACK: Final = "failed"
#: The arena's words before a reason's kind are kept only this short.
_PREFIX_CAP: Final = 120

_Shape = tuple[re.Pattern[str], Callable[[re.Match[str]], str]]

#: The kinds of ``spec/SCHEMAS.md`` (and the arena's own), each as the public sees it.
_SHAPES: Final[tuple[_Shape, ...]] = (
    (re.compile(r"External agent responded with (\d{3})"), lambda m: m[0]),
    (re.compile(r"External agent timed out after \d+ms"), lambda m: m[0]),
    (re.compile(r"External agent response exceeded \d+ bytes"), lambda m: m[0]),
    (re.compile(r"External agent unreachable: (?:dns|connect|reset|tls)"), lambda m: m[0]),
    (re.compile(r"Endpoint refused by egress policy"), lambda m: m[0]),
    (re.compile(r"Unexpected (?:token|end of JSON input)"), lambda m: "Invalid JSON"),
    (re.compile(r"Validation failed"), lambda m: m[0]),
    (re.compile(r"Challenge failed"), lambda m: m[0]),
    (re.compile(r"arena fault"), lambda m: m[0]),
    # the wizard's advisory finding, all of it the arena's words
    (
        re.compile(
            r"accepts forged signatures: a dispatch with a corrupted signature was "
            r"(?:answered \d{3}, expected a 4xx|not refused)"
        ),
        lambda m: m[0],
    ),
)

_CREDENTIAL_FIELD: Final = (
    r"[\w.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|credential|auth|session)[\w.-]*|key"
)
_Rule = tuple[re.Pattern[str], str]
_REDACTIONS: Final[tuple[_Rule, ...]] = (
    # scheme://user:password@host, connection strings included (postgresql://, redis://, ...)
    (re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://)[^\s/@]+@"), rf"\1{REDACTED}@"),
    # Authorization: Bearer <token>, Basic <credentials>
    (re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{6,}"), rf"\1 {REDACTED}"),
    # headers that carry a credential, as an error body may echo them
    (
        re.compile(
            r"(?i)\b((?:x-)?api-key|x-auth-token|cookie|set-cookie|x-agent-key)(\s*:\s*)\S+"
        ),
        rf"\1\2{REDACTED}",
    ),
    # "password": "…" and 'key': '…' in JSON and Python reprs
    (
        re.compile(
            rf"""(?i)(["'](?:{_CREDENTIAL_FIELD})["']\s*:\s*)("[^"]*"|'[^']*'|[^\s,}}\]]+)"""
        ),
        rf'\1"{REDACTED}"',
    ),
    # password=…, key=…, Password=…; in query strings and connection strings
    (
        re.compile(rf"""(?i)\b({_CREDENTIAL_FIELD})(\s*=\s*)("[^"]*"|'[^']*'|[^\s;&,'"}}\]]+)"""),
        rf"\1\2{REDACTED}",
    ),
    # keys of well-known shapes: OpenAI-style, GitHub, Slack, AWS, JSON Web Tokens
    (re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}"), REDACTED),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), REDACTED),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), REDACTED),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), REDACTED),
    # Palaestra's own: agent keys, owner and admin tokens, claim codes
    (re.compile(r"\b(?:ea|pa_owner|pa_admin|claim)_[A-Za-z0-9_-]{20,}"), REDACTED),
)


def redact(text: str) -> str:
    """``text`` with the obvious secrets in it replaced by ``[redacted]``."""
    for pattern, replacement in _REDACTIONS:
        text = pattern.sub(replacement, text)
    return text


def owner_reason(reason: str | None) -> str | None:
    """The whole reason line for the agent's owner and the admin: redacted, then capped."""
    if reason is None:
        return None
    shown = redact(reason)
    if len(shown) > REASON_CAP:
        shown = shown[: REASON_CAP - 1] + "…"
    return shown


def public_reason(reason: str | None) -> str | None:
    """The failure's kind and status, in the arena's words: nothing the agent sent."""
    if reason is None:
        return None
    found = [(m.start(), shown(m)) for pattern, shown in _SHAPES if (m := pattern.search(reason))]
    if not found:
        return PUBLIC_FALLBACK
    start, kind = min(found)
    prefix = reason[:start]
    return (redact(prefix) if len(prefix) <= _PREFIX_CAP else "") + kind
