"""PodGroupPodsCount placement scorer: prefers placements that fit more pods of the group.

Raw ``s(p) = scheduled pods of the group + proposed assignments in p``; normalized
``s * 100 // max_p s``; ``max s == 0`` -> error (§6.4).
"""

from __future__ import annotations

from scheduler.framework import Status, error

NAME = "PodGroupPodsCount"
ERR_NONE_ASSIGNED = "no pods from pod group are assigned to any of the candidate placements"


def normalize(raw: list[int]) -> tuple[list[int], Status | None]:
    m = max(raw) if raw else 0
    if m <= 0:
        return [], error(ERR_NONE_ASSIGNED, NAME)
    return [s * 100 // m for s in raw], None
