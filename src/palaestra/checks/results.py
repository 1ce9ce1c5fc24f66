"""The result of one named check, the same shape in the API, the web page and the CLI.

A check is *advisory* when it tests what the protocol only recommends (refusing
a forged signature, a stale timestamp, a repeated id): its failure is a warning
shown beside the verdict, never a reason to refuse the agent, unless the
operator (or ``palaestra check --strict``) makes it binding with :func:`binding`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from typing import Any

__all__ = ["CheckResult", "CheckVerdict", "admitted", "all_passed", "binding", "warnings"]


class CheckVerdict(StrEnum):
    """How a check ended, as shown: an advisory failure is a warning."""

    PASS = "pass"  # noqa: S105 (a verdict, not a password)
    WARN = "warn"
    FAIL = "fail"


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check: its name, whether it passed, and why not."""

    name: str
    passed: bool
    reason: str | None = None
    latency_ms: float | None = None
    error_code: str | None = None
    advisory: bool = False

    @property
    def verdict(self) -> CheckVerdict:
        if self.passed:
            return CheckVerdict.PASS
        return CheckVerdict.WARN if self.advisory else CheckVerdict.FAIL

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if data["latency_ms"] is not None:
            data["latency_ms"] = round(data["latency_ms"], 1)
        return data


def all_passed(results: Sequence[CheckResult]) -> bool:
    """Every check passed, advisory ones included."""
    return bool(results) and all(result.passed for result in results)


def admitted(results: Sequence[CheckResult]) -> bool:
    """Every binding check passed: advisory failures are warnings, not refusals."""
    return bool(results) and all(result.verdict is not CheckVerdict.FAIL for result in results)


def warnings(results: Sequence[CheckResult]) -> list[str]:
    """The reason line of every advisory check that did not pass, in order."""
    return [
        result.reason or result.name for result in results if result.verdict is CheckVerdict.WARN
    ]


def binding(results: Sequence[CheckResult]) -> list[CheckResult]:
    """The same results with every advisory check made binding (the strict rule)."""
    return [replace(result, advisory=False) if result.advisory else result for result in results]
