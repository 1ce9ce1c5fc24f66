"""Prometheus metrics, one registry per platform so tests and processes do not share counters."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["Metrics"]


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.pings = Counter(
            "palaestra_health_pings",
            "Health pings sent, by outcome.",
            ["outcome"],
            registry=self.registry,
        )
        self.failures = Counter(
            "palaestra_agent_failures",
            "Failed calls to agents, by failure kind.",
            ["kind"],
            registry=self.registry,
        )
        self.ping_lag = Histogram(
            "palaestra_health_ping_lag_seconds",
            "How late a health ping started after it was due.",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10),
            registry=self.registry,
        )
        self.status_changes = Counter(
            "palaestra_agent_status_changes",
            "Agent status transitions, by new status.",
            ["status"],
            registry=self.registry,
        )
        self.pings_in_flight = Gauge(
            "palaestra_health_pings_in_flight",
            "Health pings currently waiting on an agent.",
            registry=self.registry,
        )
        self.jobs = Counter(
            "palaestra_jobs",
            "Jobs run by this process, by job and outcome (done, error).",
            ["job", "outcome"],
            registry=self.registry,
        )
        self.dispatches = Counter(
            "palaestra_dispatches",
            "edgearena tasks sent by this process, by outcome (succeeded, failed, timeout, "
            "deferred: answered 202).",
            ["outcome"],
            registry=self.registry,
        )
        self.platform_faults = Counter(
            "palaestra_platform_faults",
            "edgearena tasks voided as the platform's own fault, charged to no agent, by kind "
            "(not-sent: not sent within its deadline; not-recorded: sent, its answer never "
            "recorded, as when a worker is killed).",
            ["kind"],
            registry=self.registry,
        )
        self.call_failures = Counter(
            "palaestra_dispatch_failures",
            "Failed edgearena tasks and refused completions, by kind: timeout, non-2xx, "
            "invalid-json, schema, too-large, unreachable, egress-refused (charged to the "
            "agent); signature (a completion refused, charged to no agent); platform-fault "
            "(voided, charged to no agent).",
            ["kind"],
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "palaestra_queue_depth",
            "Jobs in the broker's queue: waiting for a worker, or running (not yet "
            "acknowledged). Read when scraped.",
            ["state"],
            registry=self.registry,
        )
        self.dispatches_in_flight = Gauge(
            "palaestra_dispatches_in_flight",
            "edgearena tasks RUNNING against an agent, across the cluster. Read when scraped.",
            registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
