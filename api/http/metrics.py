"""Prometheus metrics of the API process.

The API does not run scheduling cycles itself, so the scheduling metrics are read from the log
at scrape time: cycles and attempts by result from ``SchedulingCycleCompleted`` events,
preemptions from ``PodPreempted`` events (counted incrementally from the last scraped
position, so a scrape reads only what is new), and queue depth from the ``objects``
projection. Append latency and HTTP request counts are measured in this process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ledger.queries import log as log_q
from ledger.queries import reports as reports_q
from ledger.sql import Conn

if TYPE_CHECKING:
    from ledger.database import Database


class LogCollector(Collector):
    """Scheduling metrics folded from the log, cached by position between scrapes."""

    def __init__(self, db: Callable[[], Database]) -> None:
        self._db = db  # a getter: the app opens its database on first use
        self._lock = threading.Lock()
        self._position = 0
        self._cycles = 0
        self._attempts: dict[str, int] = {}
        self._preemptions = 0

    def _advance(self, conn: Conn) -> None:
        while True:
            rows = reports_q.counted_events_after(conn, self._position, limit=50000)
            for pos, typ, result in rows:
                if typ == "SchedulingCycleCompleted":
                    self._cycles += 1
                    key = result or "unknown"
                    self._attempts[key] = self._attempts.get(key, 0) + 1
                else:
                    self._preemptions += 1
                self._position = pos
            if len(rows) < 50000:
                return

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("podledger_database_up", "1 when the last scrape could read the ledger")
        try:
            with self._lock, self._db().connect() as conn:
                self._advance(conn)
                head = log_q.head(conn)
                pods = reports_q.pending_pods(conn)
                by_kind = reports_q.unscheduled_groups(conn)
        except Exception:  # the scrape still answers, saying the database is unreachable
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        cycles = CounterMetricFamily("podledger_scheduling_cycles", "Scheduling cycles recorded in the log")
        cycles.add_metric([], self._cycles)
        yield cycles
        attempts = CounterMetricFamily(
            "podledger_scheduling_attempts",
            "Scheduling attempts recorded in the log, by result",
            labels=["result"],
        )
        for result, n in sorted(self._attempts.items()):
            attempts.add_metric([result], n)
        yield attempts
        pre = CounterMetricFamily("podledger_preemptions", "Pods preempted (PodPreempted events)")
        pre.add_metric([], self._preemptions)
        yield pre
        depth = GaugeMetricFamily(
            "podledger_queue_depth",
            "Objects waiting to be scheduled (pending pods, unscheduled groups)",
            labels=["kind"],
        )
        depth.add_metric(["Pod"], int(pods))
        for kind in ("PodGroup", "CompositePodGroup"):
            depth.add_metric([kind], by_kind.get(kind, 0))
        yield depth
        h = GaugeMetricFamily("podledger_log_head_position", "Newest position of the event log")
        h.add_metric([], int(head))
        yield h


class Metrics:
    """One registry per app (tests create many apps in one process)."""

    def __init__(self, db: Callable[[], Database]) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.append_seconds = Histogram(
            "podledger_append_duration_seconds",
            "Time to admit, append and project one write request",
            ["operation"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=self.registry,
        )
        self.requests = Counter(
            "podledger_http_requests",
            "HTTP requests served",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.request_seconds = Histogram(
            "podledger_http_request_duration_seconds",
            "HTTP request latency",
            ["route"],
            registry=self.registry,
        )
        self.registry.register(LogCollector(db))

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.request_seconds.labels(route).observe(seconds)


def render(metrics: Metrics) -> tuple[bytes, str]:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    return generate_latest(metrics.registry), CONTENT_TYPE_LATEST


__all__ = ["LogCollector", "Metrics", "render"]
