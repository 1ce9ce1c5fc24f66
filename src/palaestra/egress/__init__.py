"""Outbound calls under the egress policy: https only, public addresses, no redirects, capped."""

from palaestra.egress.classify import PEER_ERRORS
from palaestra.egress.client import EgressClient, EgressResult, Signer
from palaestra.egress.policy import EgressPolicy, parse_address, parse_numeric_ipv4
from palaestra.egress.resolve import PolicyResolver, resolve_checked

__all__ = [
    "PEER_ERRORS",
    "EgressClient",
    "EgressPolicy",
    "EgressResult",
    "PolicyResolver",
    "Signer",
    "parse_address",
    "parse_numeric_ipv4",
    "resolve_checked",
]
