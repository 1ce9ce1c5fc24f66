"""The checks the platform runs on agents, shared with ``palaestra check``."""

from palaestra.checks.conformance import (
    Arena,
    Deadlines,
    Progress,
    cage_check_names,
    check_cage,
    check_edgearena,
    edgearena_check_names,
    run_checks,
)
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
    "Arena",
    "CheckResult",
    "Deadlines",
    "Progress",
    "all_passed",
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
]
