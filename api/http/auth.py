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
import ipaddress
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
    """Failed-authentication throttling per client, that never locks out the right token.

    Failures are counted per client (its address, see :func:`client_address`): after ``limit``
    wrong tokens within ``window`` seconds the client is *throttled* until the oldest failure
    leaves the window. A throttled client's presented token is not checked against the token
    table (so guessing stops: every guess is answered 429 with Retry-After), except against the
    tokens that already authenticated from that client within ``remember`` seconds: those are
    what the client's legitimate users hold (the people behind one NAT address), and they keep
    working while someone else at the address fails. A success never counts as a failure and
    never extends a throttle. ``clock`` is injectable (tests pass a fake one; no sleeping)."""

    def __init__(
        self,
        limit: int = 10,
        window: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        remember: float = 12 * 3600.0,
    ) -> None:
        self.limit = limit
        self.window = window
        self.remember = remember
        self.clock = clock
        self._failures: dict[str, deque[float]] = {}
        self._good: dict[str, dict[bytes, float]] = {}  # client -> token fingerprint -> last success
        self._key = os.urandom(32)  # fingerprints are keyed: never the token, not reversible offline
        self._lock = threading.Lock()

    def fingerprint(self, token: str) -> bytes:
        return hmac.new(self._key, token.encode("utf-8", "surrogateescape"), hashlib.sha256).digest()

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
        """Seconds until ``address`` may try an unknown token again, or None when not throttled."""
        with self._lock:
            now = self.clock()
            q = self._recent(address, now)
            if len(q) < self.limit:
                return None
            return max(1, math.ceil(q[-self.limit] + self.window - now))

    def known_good(self, address: str, token: str) -> bool:
        """Whether ``token`` authenticated from ``address`` within ``remember`` seconds."""
        fp = self.fingerprint(token)
        with self._lock:
            seen = self._good.get(address, {}).get(fp)
            return seen is not None and seen > self.clock() - self.remember

    def succeeded(self, address: str, token: str) -> None:
        fp = self.fingerprint(token)
        with self._lock:
            good = self._good.setdefault(address, {})
            good[fp] = self.clock()
            while len(good) > 64:  # bounded per client: forget the oldest
                good.pop(min(good, key=good.__getitem__))
            if len(self._good) > 100_000:  # bounded overall: forget the oldest client
                self._good.pop(next(iter(self._good)))

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


@dataclass(frozen=True, slots=True)
class AuthOutcome:
    """The result of :func:`check_token`: a principal, or why not (``status`` 401 or 429)."""

    principal: Principal | None
    status: int = 200
    reason: str = ""  # never contains the token
    retry_after: int | None = None


def check_token(
    tokens: TokenTable,
    throttle: AuthThrottle,
    presented: str | None,
    client: str,
    *,
    insecure_local: bool = False,
) -> AuthOutcome:
    """The one token check of every entry (bearer tokens of both APIs, the dashboard's login
    form and cookie): the configured tokens, the per-client throttle, and the reason to answer."""
    if not tokens:
        if insecure_local:
            return AuthOutcome(LOCAL)
        return AuthOutcome(None, 401, "no tokens are configured on this server")
    if not presented:
        return AuthOutcome(None, 401, "a bearer token is required")
    wait = throttle.retry_after(client)
    if wait is not None and not throttle.known_good(client, presented):
        return AuthOutcome(
            None, 429, f"too many failed token attempts from this address; retry in {wait} s", wait
        )
    principal = tokens.lookup(presented)
    if principal is None:
        throttle.failed(client)
        return AuthOutcome(None, 401, "the bearer token is not valid")
    throttle.succeeded(client, presented)
    return AuthOutcome(principal)


# ------------------------------------------------------------------ the client behind proxies

PROXIES_ENV = "PODLEDGER_TRUSTED_PROXIES"


def parse_proxies(spec: str | None) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """``"10.0.0.0/8,127.0.0.1"`` → networks whose ``X-Forwarded-For``/``-Proto`` are believed."""
    nets = []
    for item in (spec or "").split(","):
        if item.strip():
            try:
                nets.append(ipaddress.ip_network(item.strip(), strict=False))
            except ValueError:
                raise ValueError(f"{PROXIES_ENV}: {item.strip()!r} is not an IP address or network") from None
    return tuple(nets)


def _trusted(address: str, proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in net for net in proxies)


def client_address(
    peer: str | None,
    headers: Mapping[str, str],
    proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...],
) -> str:
    """Who the client is for throttling: the TCP peer, or, when the peer is a trusted proxy, the
    last address of ``X-Forwarded-For`` not itself a trusted proxy (the rightmost hop a trusted
    proxy saw; the leftmost entries are whatever the client claimed)."""
    address = peer or "-"
    if not proxies or not _trusted(address, proxies):
        return address
    hops = [h.strip() for h in headers.get("x-forwarded-for", "").split(",") if h.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, proxies):
            return hop
    return hops[0] if hops else address


def request_scheme(
    scheme: str,
    peer: str | None,
    headers: Mapping[str, str],
    proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...],
) -> str:
    """``https`` when the connection is TLS, or a trusted proxy says ``X-Forwarded-Proto: https``."""
    if proxies and _trusted(peer or "-", proxies):
        forwarded = headers.get("x-forwarded-proto", "").split(",")[-1].strip().lower()
        if forwarded in ("http", "https"):
            return forwarded
    return scheme


def tokens_from_env() -> TokenTable:
    return parse_tokens(os.environ.get(ENV_VAR) or None)


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()
