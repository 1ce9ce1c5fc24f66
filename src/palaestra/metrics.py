"""Prometheus metrics, one registry per platform so tests and processes do not share counters."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["Metrics"]


class Metrics:
    def __init__(self) -> None:
        registry = self.registry = CollectorRegistry()

        def counter(name: str, documentation: str, *labels: str) -> Counter:
            return Counter(name, documentation, labels, registry=registry)

        def gauge(name: str, documentation: str, *labels: str) -> Gauge:
            return Gauge(name, documentation, labels, registry=registry)

        self.pings = counter("palaestra_health_pings", "Health pings sent, by outcome.", "outcome")
        self.failures = counter(
            "palaestra_agent_failures", "Failed calls to agents, by failure kind.", "kind"
        )
        self.ping_lag = Histogram(
            "palaestra_health_ping_lag_seconds",
            "How late a health ping started after it was due.",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10),
            registry=registry,
        )
        self.status_changes = counter(
            "palaestra_agent_status_changes", "Agent status transitions, by new status.", "status"
        )
        self.pings_in_flight = gauge(
            "palaestra_health_pings_in_flight", "Health pings currently waiting on an agent."
        )
        self.jobs = counter(
            "palaestra_jobs",
            "Jobs run by this process, by job and outcome (done, error).",
            "job",
            "outcome",
        )
        self.dispatches = counter(
            "palaestra_dispatches",
            "edgearena tasks sent by this process, by outcome (succeeded, failed, timeout, "
            "deferred: answered 202).",
            "outcome",
        )
        self.platform_faults = counter(
            "palaestra_platform_faults",
            "edgearena tasks voided as the platform's own fault, charged to no agent, by kind "
            "(not-sent: not sent within its deadline; not-recorded: sent, its answer never "
            "recorded, as when a worker is killed).",
            "kind",
        )
        self.call_failures = counter(
            "palaestra_dispatch_failures",
            "Failed edgearena tasks and refused completions, by kind: timeout, non-2xx, "
            "invalid-json, schema, too-large, unreachable, egress-refused (charged to the "
            "agent); signature (a completion refused, charged to no agent); platform-fault "
            "(voided, charged to no agent).",
            "kind",
        )
        self.queue_depth = gauge(
            "palaestra_queue_depth",
            "Jobs in the broker's queue: waiting for a worker, or running (not yet "
            "acknowledged). Read when scraped.",
            "state",
        )
        self.dispatches_in_flight = gauge(
            "palaestra_dispatches_in_flight",
            "edgearena tasks RUNNING against an agent, across the cluster. Read when scraped.",
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
