"""The result of one named check, the same shape in the API, the web page and the CLI."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["CheckResult", "all_passed"]


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check: its name, whether it passed, and why not."""

    name: str
    passed: bool
    reason: str | None = None
    latency_ms: float | None = None
    error_code: str | None = None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if data["latency_ms"] is not None:
            data["latency_ms"] = round(data["latency_ms"], 1)
        return data


def all_passed(results: Sequence[CheckResult]) -> bool:
    return bool(results) and all(result.passed for result in results)
