"""Bearer-token authentication with three roles: reader < writer < admin.

Tokens come from settings: ``PODLEDGER_TOKENS="reader=TOKEN,writer=TOKEN,admin=TOKEN"``; a role
may appear several times. A token may carry a name for the audit trail, ``writer:ci=TOKEN``,
which becomes the actor ``writer:ci`` in the meta of every event it writes (plain ``writer=``
tokens are recorded as ``writer``, or ``writer#2`` for the second one).

Every presented token is compared against every configured token with
:func:`hmac.compare_digest`, without stopping early, so the time taken does not depend on
which token (or how much of one) matched. Tokens are never logged or echoed: errors name the
role that was required, never what was sent.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

ROLES = ("reader", "writer", "admin")
RANK = {role: i for i, role in enumerate(ROLES)}
ENV_VAR = "PODLEDGER_TOKENS"
COOKIE = "podledger_token"
MIN_TOKEN_LENGTH = 16


class TokenConfigError(ValueError):
    """``PODLEDGER_TOKENS`` is malformed (the message never contains a token)."""


@dataclass(frozen=True, slots=True)
class Principal:
    role: str
    actor: str
    # what Idempotency-Keys are private to: a digest of the token (stable when the token list
    # is reordered; never the token itself)
    scope: str = ""

    def allows(self, role: str) -> bool:
        return RANK[self.role] >= RANK[role]


LOCAL = Principal("admin", "local", "local")


@dataclass(frozen=True)
class TokenTable:
    """Configured tokens. Empty means no authentication is configured."""

    entries: tuple[tuple[bytes, Principal], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.entries)

    def __repr__(self) -> str:  # never show the secrets
        return f"TokenTable({len(self.entries)} tokens)"

    def lookup(self, presented: str | None) -> Principal | None:
        if not presented:
            return None
        candidate = presented.encode("utf-8", "surrogateescape")
        found: Principal | None = None
        for secret, principal in self.entries:
            # No early exit: every comparison runs whatever matched before.
            if hmac.compare_digest(candidate, secret) and found is None:
                found = principal
        return found


def parse_tokens(spec: str | Mapping[str, object] | None) -> TokenTable:
    """Parse ``"reader=T1,writer=T2,writer:ci=T3,admin=T4"`` (or a mapping role -> token(s))."""
    if spec is None:
        return TokenTable()
    pairs: list[tuple[str, str]] = []
    if isinstance(spec, Mapping):
        for key, value in spec.items():
            values = [value] if isinstance(value, str) else list(value)  # type: ignore[call-overload]
            pairs.extend((str(key), str(v)) for v in values)
    else:
        for n, item in enumerate(p.strip() for p in spec.split(",")):
            if not item:
                continue
            key, sep, token = item.partition("=")
            if not sep:
                raise TokenConfigError(f"{ENV_VAR}: entry {n + 1} is not ROLE=TOKEN")
            pairs.append((key.strip(), token.strip()))
    entries: list[tuple[bytes, Principal]] = []
    seen: dict[str, int] = {}
    secrets: set[bytes] = set()
    for n, (key, token) in enumerate(pairs, start=1):
        role, _, name = key.partition(":")
        role = role.strip().lower()
        if role not in RANK:
            raise TokenConfigError(
                f"{ENV_VAR}: entry {n} has unknown role {role!r} (use reader, writer or admin)"
            )
        if len(token) < MIN_TOKEN_LENGTH:
            raise TokenConfigError(
                f"{ENV_VAR}: entry {n} ({role}): a token must have at least {MIN_TOKEN_LENGTH} characters"
            )
        secret = token.encode("utf-8", "surrogateescape")
        if secret in secrets:
            raise TokenConfigError(f"{ENV_VAR}: entry {n} ({role}) repeats a token given before")
        secrets.add(secret)
        seen[role] = seen.get(role, 0) + 1
        actor = (
            f"{role}:{name.strip()}"
            if name.strip()
            else (role if seen[role] == 1 else f"{role}#{seen[role]}")
        )
        scope = hashlib.sha256(b"podledger-idempotency-scope\x00" + secret).hexdigest()[:32]
        entries.append((secret, Principal(role, actor, scope)))
    return TokenTable(tuple(entries))


class AuthThrottle:
    """Failed-authentication throttling per client address: after ``limit`` wrong tokens within
    ``window`` seconds, that address is answered 429 (with Retry-After) until the oldest failure
    leaves the window. ``clock`` is injectable (tests pass a fake one; no sleeping)."""

    def __init__(
        self, limit: int = 10, window: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, address: str, now: float) -> deque[float]:
        q = self._failures.get(address)
        if q is None:
            return deque()
        while q and q[0] <= now - self.window:
            q.popleft()
        if not q:
            del self._failures[address]
        return q

    def retry_after(self, address: str) -> int | None:
        """Seconds until ``address`` may try again, or None when it is not throttled."""
        with self._lock:
            now = self.clock()
            q = self._recent(address, now)
            if len(q) < self.limit:
                return None
            return max(1, math.ceil(q[-self.limit] + self.window - now))

    def failed(self, address: str) -> None:
        with self._lock:
            now = self.clock()
            self._recent(address, now)
            q = self._failures.setdefault(address, deque())
            q.append(now)
            while len(q) > self.limit:  # bounded memory per address
                q.popleft()
            if len(self._failures) > 100_000:  # bounded memory overall: forget the oldest address
                self._failures.pop(next(iter(self._failures)))


def tokens_from_env() -> TokenTable:
    return parse_tokens(os.environ.get(ENV_VAR) or None)


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()
