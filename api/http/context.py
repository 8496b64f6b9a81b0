"""What the routes share: the engine (opened lazily), tokens, metrics and jobs."""

from __future__ import annotations

import threading

from fastapi import Request
from sqlalchemy.engine import Engine

from api.http.auth import AuthThrottle, TokenTable
from api.http.jobs import JobStore
from api.http.metrics import Metrics


class AppContext:
    """What the routes share: the engine (opened lazily), tokens, metrics, jobs."""

    def __init__(
        self,
        engine: Engine | None,
        tokens: TokenTable,
        insecure_local: bool,
        *,
        metrics_public: bool = False,
        throttle: AuthThrottle | None = None,
    ) -> None:
        self._engine = engine
        self.metrics_public = metrics_public
        self.throttle = throttle or AuthThrottle()
        self._lock = threading.Lock()
        self.tokens = tokens
        self.insecure_local = insecure_local
        self._metrics: Metrics | None = None
        self.jobs = JobStore()

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    from ledger import db

                    self._engine = db.get_engine()
        return self._engine

    @property
    def metrics(self) -> Metrics:
        if self._metrics is None:
            with self._lock:
                if self._metrics is None:
                    self._metrics = Metrics(lambda: self.engine)
        return self._metrics


def context(request: Request) -> AppContext:
    ctx: AppContext = request.app.state.ctx
    return ctx


__all__ = ["AppContext", "context"]
