"""``policy/v1`` PodDisruptionBudget."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import Field

from ledger.resources.models.meta import K8sModel, LabelSelector, Resource
from ledger.resources.models.values import Problems

_PERCENT = re.compile(r"^\d+%$")


class PodDisruptionBudgetSpec(K8sModel):
    selector: LabelSelector | None = None
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    unhealthy_pod_eviction_policy: Literal["IfHealthyBudget", "AlwaysAllow"] | None = None


class PodDisruptionBudget(Resource):
    KIND: ClassVar[str] = "PodDisruptionBudget"
    spec: PodDisruptionBudgetSpec = Field(default_factory=PodDisruptionBudgetSpec)

    def check(self) -> Problems:
        problems = super().check()
        spec = self.spec
        if spec.min_available is not None and spec.max_unavailable is not None:
            problems.append(("spec", "minAvailable and maxUnavailable cannot be both set"))
        for field, value in (("minAvailable", spec.min_available), ("maxUnavailable", spec.max_unavailable)):
            if isinstance(value, int) and value < 0:
                problems.append((f"spec.{field}", "must be greater than or equal to 0"))
            if isinstance(value, str):
                if not _PERCENT.match(value):
                    problems.append(
                        (
                            f"spec.{field}",
                            f"a valid percent string must be a numeric string "
                            f"followed by an ending '%' (e.g. '1%',  or '93%'), got {value!r}",
                        )
                    )
                elif int(value[:-1]) > 100:
                    problems.append((f"spec.{field}", "must not be greater than 100%"))
        if spec.selector is not None:
            problems += spec.selector.check("spec.selector")
        return problems
