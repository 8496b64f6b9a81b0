"""Migration 0022: the admission read (``ledger_admission_read``) plans once per session and its
plan is primary-key probes, also when that plan is made on an empty ledger (a plan made while
the tables are empty must not scan them once they are large: migration 0019's lesson)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ledger.queries import objects as objects_q

SETTINGS = (
    "enable_seqscan=off",
    "enable_hashjoin=off",
    "enable_mergejoin=off",
    "plan_cache_mode=force_generic_plan",
)


def _seq_scans(conn: sa.Connection) -> dict[str, int]:
    """Sequential scans of objects and streams by this transaction so far."""
    rows = conn.execute(
        sa.text(
            "SELECT relname, seq_scan FROM pg_stat_xact_user_tables WHERE relname IN ('objects', 'streams')"
        )
    )
    return {name: int(n) for name, n in rows}


def test_the_function_pins_its_plan_settings(engine: Engine) -> None:
    with engine.connect() as conn:
        config = conn.execute(
            sa.text("SELECT proconfig FROM pg_proc WHERE proname = 'ledger_admission_read'")
        ).scalar_one()
    for setting in SETTINGS:
        assert setting in config, (setting, config)


def test_admission_read_on_an_empty_ledger_probes_the_keys(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(sa.text("ANALYZE objects"))
        conn.execute(sa.text("ANALYZE streams"))
    with engine.begin() as conn:
        before = _seq_scans(conn)
        # the session's first call makes the generic plan, on empty tables
        rows = objects_q.manifests_with_versions(
            conn, [("Pod", "ns", "a"), ("Node", "", "n1")], ["pod/ns/a", "node/n1"], "PriorityClass"
        )
        assert sorted(rows) == [
            ("Node", "", "n1", None, "node/n1", 0),
            ("Pod", "ns", "a", None, "pod/ns/a", 0),
        ]
        for _ in range(3):
            objects_q.manifests_with_versions(conn, [("Pod", "ns", "b")], ["pod/ns/b"], "PriorityClass")
        assert _seq_scans(conn) == before, "the admission read scanned objects or streams"


def test_admission_read_returns_manifests_versions_and_the_preloaded_kind(engine: Engine) -> None:
    from api.services import objects as services
    from ledger.resources.parse import Document

    raws = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "hi"},
            "value": 10,
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "a", "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        },
    ]
    objs, errors = services.load_documents(
        [Document(index=i + 1, source="t", raw=r) for i, r in enumerate(raws)]
    )
    assert not errors
    assert services.apply_objects(engine, objs).ok
    with engine.begin() as conn:
        rows = objects_q.manifests_with_versions(
            conn, [("Pod", "ns", "a"), ("Pod", "ns", "zz")], ["pod/ns/a", "pod/ns/zz"], "PriorityClass"
        )
    by_key = {(r[0], r[1], r[2], r[4]): r for r in rows}
    pod = by_key[("Pod", "ns", "a", "pod/ns/a")]
    assert pod[3]["metadata"]["name"] == "a" and pod[5] == 1
    assert by_key[("Pod", "ns", "zz", "pod/ns/zz")][3:] == (None, "pod/ns/zz", 0)
    pc = by_key[("PriorityClass", "", "hi", None)]
    assert pc[3]["value"] == 10 and pc[5] is None
