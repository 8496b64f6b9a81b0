"""Cost of one refresh of ``v_pending_now``'s predicted starts (``python -m bench.predict_refresh``,
issue 34; docs/prediction.md): a private ledger with 20 nodes of 8 CPUs, 300 past lifetimes
(15 waves of 20 node-sized pods living 100 to 282 s), 20 holders and 30 pending half-node pods;
then ``api.services.pending_predictions.refresh`` of the first 10 in queue order, with the
refresh's shared reads and with one set of reads per prediction (as explain makes them).
Prints each prediction's time since the refresh began; writes nothing.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from api.services import pending_predictions as pp
from api.services.simulate import Simulation, private_ledger

if TYPE_CHECKING:
    from ledger.database import Database


def _node(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "8", "memory": "64Gi", "pods": 110}},
    }


def _pod(name: str, cpu: str) -> dict:
    req = {"cpu": cpu}
    spec = {"containers": [{"name": "c", "resources": {"requests": req, "limits": dict(req)}}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def main(limit: int = 10) -> None:
    steps: list[dict] = [{"apply": [_node(f"n{i}") for i in range(20)]}]
    for b in range(15):
        steps += [
            {"apply": [_pod(f"w{b}-{j}", "8") for j in range(20)]},
            {"advance": f"{100 + 13 * b}s"},
            {"delete": [{"kind": "Pod", "name": f"w{b}-{j}"} for j in range(20)]},
        ]
    steps += [
        {"apply": [_pod(f"h{j}", "8") for j in range(20)]},
        {"advance": "30s"},
        {"apply": [_pod(f"p{j}", "4") for j in range(30)]},
        {"advance": "5s"},
    ]
    with private_ledger() as database:
        Simulation(database, {}, "predict-refresh").run(steps)
        for shared in (True, False):
            _measure(database, limit, shared)


def _measure(database: Database, limit: int, shared: bool) -> None:
    t0 = time.perf_counter()
    marks: list[float] = []
    done = pp.refresh(
        database,
        limit=limit,
        shared_reads=shared,
        on_entity=lambda *_: marks.append(time.perf_counter() - t0),
    )
    label = "shared reads" if shared else "reads per prediction"
    print(
        f"{label}: {done.rows} of {done.pending} pending as of position {done.position} in "
        f"{done.seconds:.2f} s; after each: {', '.join(f'{m:.2f}' for m in marks)}"
    )


if __name__ == "__main__":
    main()
