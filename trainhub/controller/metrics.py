"""The controller's Prometheus metrics, on a registry of its own (served at /metrics)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


@dataclass
class ControllerMetrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.reconcile_seconds = Histogram(
            "trainhub_controller_reconcile_seconds",
            "Seconds one reconcile of a team namespace took.",
            ["namespace"],
            registry=r,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.reconcile_errors = Counter(
            "trainhub_controller_reconcile_errors_total",
            "Reconciles of a team namespace that failed (retried after a backoff).",
            ["namespace"],
            registry=r,
        )
        self.queue_depth = Gauge(
            "trainhub_controller_queue_depth",
            "Team namespaces waiting for a reconcile.",
            registry=r,
        )
        self.watch_restarts = Counter(
            "trainhub_controller_watch_restarts_total",
            "Watches started again: resumed (the API server ended one), gone (410: listed "
            "again) or error (cut off, the API server away).",
            ["kind", "reason"],
            registry=r,
        )
        self.cached_objects = Gauge(
            "trainhub_controller_cached_objects",
            "Objects held in the watch-fed cache.",
            registry=r,
        )
        self.leader = Gauge(
            "trainhub_controller_leader",
            "1 while this replica holds the lease and acts, else 0.",
            registry=r,
        )
        self.alerts_delivered = Counter(
            "trainhub_controller_alerts_delivered_total",
            "Alert deliveries attempted by this replica's sender passes.",
            registry=r,
        )

    def watch_restart(self, kind: str, reason: str) -> None:
        self.watch_restarts.labels(kind=kind, reason=reason).inc()
