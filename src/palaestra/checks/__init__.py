"""The checks the platform runs on agents, shared with ``palaestra check``."""

from palaestra.checks.results import CheckResult, all_passed
from palaestra.checks.wizard import (
    SIMULATION_CHECKS,
    handshake,
    probe,
    run_wizard,
    simulation,
    tampered_signature,
)

__all__ = [
    "SIMULATION_CHECKS",
    "CheckResult",
    "all_passed",
    "handshake",
    "probe",
    "run_wizard",
    "simulation",
    "tampered_signature",
]
