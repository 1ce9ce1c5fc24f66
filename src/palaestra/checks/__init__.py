"""The checks the platform runs on agents, shared with ``palaestra check``."""

from palaestra.checks.conformance import (
    Deadlines,
    Progress,
    cage_check_names,
    check_cage,
    check_edgearena,
    edgearena_check_names,
    run_checks,
)
from palaestra.checks.results import (
    CheckResult,
    CheckVerdict,
    admitted,
    all_passed,
    binding,
    warnings,
)
from palaestra.checks.wizard import (
    ACCEPTS_FORGED,
    REJECTS_FORGED,
    SIMULATION_CHECKS,
    TAMPERED,
    handshake,
    probe,
    run_wizard,
    simulation,
    tampered_signature,
)
from palaestra.protocol.constants import Arena

__all__ = [
    "ACCEPTS_FORGED",
    "REJECTS_FORGED",
    "SIMULATION_CHECKS",
    "TAMPERED",
    "Arena",
    "CheckResult",
    "CheckVerdict",
    "Deadlines",
    "Progress",
    "admitted",
    "all_passed",
    "binding",
    "cage_check_names",
    "check_cage",
    "check_edgearena",
    "edgearena_check_names",
    "handshake",
    "probe",
    "run_checks",
    "run_wizard",
    "simulation",
    "tampered_signature",
    "warnings",
]
