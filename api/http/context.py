"""What the routes share: the ledger's database (opened lazily), tokens, metrics and jobs."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from fastapi import Request

from api.http.auth import (
    AuthOutcome,
    AuthThrottle,
    TokenTable,
    check_token,
    client_address,
    parse_proxies,
    request_scheme,
)
from api.http.jobs import JobStore
from api.http.limits import MAX_BODY
from api.http.metrics import Metrics

if TYPE_CHECKING:
    from ledger.database import Database


class AppContext:
    """What the routes share: the database (opened lazily), tokens, metrics, jobs."""

    def __init__(
        self,
        db: Database | None,
        tokens: TokenTable,
        insecure_local: bool,
        *,
        metrics_public: bool = False,
        throttle: AuthThrottle | None = None,
        max_body: int = MAX_BODY,
        trusted_proxies: str | None = None,
    ) -> None:
        self._db = db
        self.max_body = max_body
        # proxies whose X-Forwarded-For/-Proto are believed (PODLEDGER_TRUSTED_PROXIES); none by default
        self.proxies = parse_proxies(trusted_proxies)
        self.metrics_public = metrics_public
        self.throttle = throttle or AuthThrottle()
        self._lock = threading.Lock()
        self.tokens = tokens
        self.insecure_local = insecure_local
        self._metrics: Metrics | None = None
        self.jobs = JobStore()

    @property
    def db(self) -> Database:
        if self._db is None:
            with self._lock:
                if self._db is None:
                    from ledger import db

                    self._db = db.get_database()
        return self._db

    def client(self, request: Request) -> str:
        """The client address the throttle counts (behind a trusted proxy: the forwarded one)."""
        peer = request.client.host if request.client else None
        return client_address(peer, request.headers, self.proxies)

    def scheme(self, request: Request) -> str:
        peer = request.client.host if request.client else None
        return request_scheme(request.url.scheme, peer, request.headers, self.proxies)

    def authenticate(self, request: Request, token: str | None) -> AuthOutcome:
        """Check a presented token (bearer or cookie) for this request's client."""
        return check_token(
            self.tokens, self.throttle, token, self.client(request), insecure_local=self.insecure_local
        )

    @property
    def read_db(self) -> Database:
        """The database a read is served by: a standby that has replayed the request's
        ``X-Podledger-Min-LSN``, else the primary (``ledger.replica.route``; it may wait, so
        use it in the thread that reads, never on the event loop)."""
        from ledger import replica

        return replica.route(self.db)

    @property
    def metrics(self) -> Metrics:
        if self._metrics is None:
            with self._lock:
                if self._metrics is None:
                    self._metrics = Metrics(lambda: self.db)
        return self._metrics


def context(request: Request) -> AppContext:
    ctx: AppContext = request.app.state.ctx
    return ctx


__all__ = ["AppContext", "context"]
