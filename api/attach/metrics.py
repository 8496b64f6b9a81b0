"""Prometheus metrics of ``attach`` (served with ``--metrics-port``), in a registry of its own."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge


def _registry() -> CollectorRegistry:
    return CollectorRegistry()


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=_registry)

    def __post_init__(self) -> None:
        r = self.registry
        self.changes = Counter(
            "podledger_attach_changes",
            "Remote changes handled, by kind and outcome (created, updated, unchanged, deleted, bound, ...)",
            ["kind", "outcome"],
            registry=r,
        )
        self.reconnects = Counter(
            "podledger_attach_reconnects", "Watches re-opened after an error", ["kind"], registry=r
        )
        self.relists = Counter("podledger_attach_relists", "Lists after 410 Gone", ["kind"], registry=r)
        self.auth_failures = Counter(
            "podledger_attach_auth_failures",
            "Requests the cluster refused (401 Unauthorized, 403 Forbidden), by status",
            ["status"],
            registry=r,
        )
        self.queue_depth = Gauge(
            "podledger_attach_queue_depth", "Changes read but not yet written", registry=r
        )
        self.lag_rv = Gauge(
            "podledger_attach_lag_resource_versions",
            "Highest resourceVersion read minus the last one written, over the watched streams",
            registry=r,
        )
        self.lag_seconds = Gauge(
            "podledger_attach_lag_seconds", "Age of the change being written when it was written", registry=r
        )

    def serve(self, port: int, addr: str = "127.0.0.1") -> None:
        from prometheus_client import start_http_server

        start_http_server(port, addr=addr, registry=self.registry)
