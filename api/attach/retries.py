"""The retry table of attach's calls to the cluster (binds, evictions, group conditions): per
decision, the tries made and the earliest time of the next one; exponential backoff from
``base`` doubling up to ``cap``, at most ``limit`` tries per process (``None``: no limit; a
restart tries again)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Retries:
    base: float = 0.5
    cap: float = float("inf")
    limit: int | None = 5
    entries: dict[int, tuple[int, float]] = field(default_factory=dict)  # key -> (tries, not before)

    def due(self, key: int, now: float) -> int | None:
        """The tries made so far if a call for ``key`` may go now, else None."""
        tries, not_before = self.entries.get(key, (0, 0.0))
        if (self.limit is not None and tries >= self.limit) or now < not_before:
            return None
        return tries

    def done(self, key: int) -> None:
        self.entries.pop(key, None)

    def failed(self, key: int, tries: int, now: float) -> None:
        """Record the failure of try number ``tries + 1``."""
        self.entries[key] = (tries + 1, now + min(self.base * (2**tries), self.cap))
