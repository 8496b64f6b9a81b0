"""Kubernetes Events (core/v1 and events.k8s.io/v1) derived from the scheduler's decisions.

Nothing is stored for them: every list reads the decisions of the log (PodBound,
PodUnschedulable/Retried, PodGroupUnschedulable/Retried, PodGroupScheduled, PodPreempted) and
folds repeats of the same message into one Event with a count, as a cluster's event recorder does
(a retry that changed nothing is one PodRetried/PodGroupRetried pointing at its verdict).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from api.k8s import backend
from scheduler import messages as m

TYPES = (
    "PodBound",
    "PodUnschedulable",
    "PodRetried",
    "PodGroupUnschedulable",
    "PodGroupRetried",
    "PodGroupScheduled",
    "PodPreempted",
)
COMPONENT = "podledger-scheduler"


def _split(key: str) -> tuple[str, str]:
    ns, _, name = key.partition("/")
    return ns, name


def _micro(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _sec(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _describe(
    ev: Any, diagnoses: dict[int, tuple[str, str, str]]
) -> tuple[str, str, str, str, str, str] | None:
    """(involved kind, key, type, reason, action, message) of one decision event."""
    d = ev.data
    if ev.type == "PodBound":
        ns, name = _split(d["pod"])
        return (
            "Pod",
            d["pod"],
            "Normal",
            m.EVENT_SCHEDULED,
            "Binding",
            m.MSG_ASSIGNED % (ns, name, d["node"]),
        )
    if ev.type == "PodUnschedulable":
        msg = d.get("message") or d.get("reason", "")
        diagnoses[ev.position] = (d["pod"], d.get("reason", ""), msg)
        return ("Pod", d["pod"], "Warning", m.EVENT_FAILED_SCHEDULING, "Scheduling", msg)
    if ev.type == "PodRetried":
        prev = diagnoses.get(int(d.get("diagnosis_position") or 0))
        if prev is None:
            return None
        return ("Pod", d["pod"], "Warning", m.EVENT_FAILED_SCHEDULING, "Scheduling", prev[2])
    if ev.type == "PodGroupUnschedulable":
        msg = d.get("message") or d.get("reason", "")
        diagnoses[ev.position] = (d["group"], d.get("reason", ""), msg)
        return ("PodGroup", d["group"], "Warning", m.EVENT_FAILED_SCHEDULING, "Scheduling", msg)
    if ev.type == "PodGroupRetried":
        prev = diagnoses.get(int(d.get("diagnosis_position") or 0))
        if prev is None:
            return None
        return ("PodGroup", d["group"], "Warning", m.EVENT_FAILED_SCHEDULING, "Scheduling", prev[2])
    if ev.type == "PodGroupScheduled":
        pods = d.get("pods") or []
        where = f" ({d['placement']})" if d.get("placement") else ""
        return (
            "PodGroup",
            d["group"],
            "Normal",
            m.EVENT_SCHEDULED,
            "Scheduling",
            f"Scheduled {len(pods)} pods{where}",
        )
    if ev.type == "PodPreempted":
        msg = d.get("message") or f"Preempted by {d.get('preemptor')} on node {d.get('node')}"
        return ("Pod", d["victim"], "Normal", m.EVENT_PREEMPTED, "Preemption", msg)
    return None


API_VERSIONS = {"Pod": "v1", "PodGroup": "scheduling.k8s.io/v1beta1"}


def derive(conn: Any, upto: int, namespace: str | None) -> list[dict[str, Any]]:
    """Aggregated events up to ``upto``: dicts with the fields both Event versions need."""
    uids: dict[tuple[str, str, str], str] = {}
    for kind in ("Pod", "PodGroup"):
        for r in backend.rows(conn, kind, namespace):
            uids[(kind, r["namespace"], r["name"])] = r["uid"]
    diagnoses: dict[int, tuple[str, str, str]] = {}
    summaries: dict[int, str] = {}
    agg: dict[tuple[str, ...], dict[str, Any]] = {}
    members = _Members()
    for ev in backend.decision_events(conn, TYPES, upto):
        desc = _describe(ev, diagnoses)
        if desc is None:
            continue
        _count(agg, desc, ev, uids, namespace)
        said = _summary(ev, summaries)
        if said is not None:
            _count(agg, said, ev, uids, namespace)
        for member in members.see(ev, desc):
            _count(agg, member, ev, uids, namespace)
    return sorted(agg.values(), key=lambda e: (e["namespace"], e["position"]))


DIAGNOSIS = "Diagnosis"  # podledger's own Event reason: the diagnosis in one line (issue 31)


def _summary(ev: Any, summaries: dict[int, str]) -> tuple[str, str, str, str, str, str] | None:
    """podledger's Event beside upstream's FailedScheduling on an unschedulable PodGroup: the
    one-line summary the scheduler edge recorded with the decision (``summary``; a retry
    repeats its verdict's), so ``kubectl describe podgroup`` shows both."""
    d = ev.data
    if ev.type == "PodGroupUnschedulable":
        text = d.get("summary") or ""
        summaries[ev.position] = text
    elif ev.type == "PodGroupRetried":
        text = summaries.get(int(d.get("diagnosis_position") or 0), "")
    else:
        return None
    if not text:
        return None
    return ("PodGroup", d["group"], "Warning", DIAGNOSIS, "Scheduling", f"podledger: {text}")


class _Members:
    """The failed member pods of each group's last recorded attempt (their PodUnschedulable
    events follow the group's verdict in the same cycle), so that an unchanged group retry, one
    PodGroupRetried with ``attempts`` and no member events, still counts a FailedScheduling per
    member as the full attempt did."""

    def __init__(self) -> None:
        self.last: dict[str, dict[str, tuple[str, ...]]] = {}  # group -> pod -> its event's desc
        self.group_of: dict[str, str] = {}
        self.cycle: tuple[Any, ...] | None = None
        self.group: str | None = None

    def see(self, ev: Any, desc: tuple[str, ...]) -> list[tuple[str, ...]]:
        d, cycle = ev.data, ((ev.meta or {}).get("cycle"), ev.effective_at)
        if ev.type == "PodGroupRetried" and d.get("attempts") is not None:
            return list(self.last.get(d["group"], {}).values())
        if ev.type in ("PodGroupUnschedulable", "PodGroupRetried", "PodGroupScheduled"):
            self.cycle, self.group = cycle, d["group"]
            self.last[d["group"]] = {}
        elif ev.type == "PodUnschedulable" and self.group is not None and cycle == self.cycle:
            self._forget(d["pod"])
            self.last[self.group][d["pod"]] = desc
            self.group_of[d["pod"]] = self.group
        elif ev.type in ("PodBound", "PodPreempted", "PodUnschedulable"):
            self._forget(d.get("pod") or d.get("victim") or "")
        return []

    def _forget(self, pod: str) -> None:
        group = self.group_of.pop(pod, None)
        if group is not None:
            self.last.get(group, {}).pop(pod, None)


def _count(
    agg: dict[tuple[str, ...], dict[str, Any]],
    desc: tuple[str, ...],
    ev: Any,
    uids: dict[tuple[str, str, str], str],
    namespace: str | None,
) -> None:
    """Fold one described decision into the aggregated Events (repeats raise the count)."""
    kind, key, typ, reason, action, message = desc
    message = m.truncate_note(message)  # as upstream's event recorder: at most 1024 bytes
    ns, name = _split(key)
    if namespace is not None and ns != namespace:
        return
    k = (kind, ns, name, typ, reason, message)
    cur = agg.get(k)
    if cur is None:
        agg[k] = {
            "kind": kind,
            "namespace": ns,
            "name": name,
            "uid": uids.get((kind, ns, name), ""),
            "type": typ,
            "reason": reason,
            "action": action,
            "message": message,
            "first": ev.effective_at,
            "last": ev.effective_at,
            "first_position": ev.position,
            "position": ev.position,
            "count": 1,
            "actor": (ev.meta or {}).get("actor") or "scheduler",
        }
    else:
        cur["count"] += 1
        cur["last"], cur["position"] = ev.effective_at, ev.position


def _involved(e: dict[str, Any]) -> dict[str, Any]:
    out = {
        "kind": e["kind"],
        "namespace": e["namespace"],
        "name": e["name"],
        "apiVersion": API_VERSIONS[e["kind"]],
    }
    if e["uid"]:
        out["uid"] = e["uid"]
    return out


def _name(e: dict[str, Any]) -> str:
    return f"{e['name']}.{e['first_position']:x}"


def core_event(e: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": _name(e),
            "namespace": e["namespace"],
            "resourceVersion": str(e["position"]),
            "creationTimestamp": _sec(e["first"]),
        },
        "involvedObject": _involved(e),
        "reason": e["reason"],
        "message": e["message"],
        "type": e["type"],
        "count": e["count"],
        "firstTimestamp": _sec(e["first"]),
        "lastTimestamp": _sec(e["last"]),
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": e["actor"],
        "action": e["action"],
    }


def events_v1(e: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {
            "name": _name(e),
            "namespace": e["namespace"],
            "resourceVersion": str(e["position"]),
            "creationTimestamp": _sec(e["first"]),
        },
        "eventTime": _micro(e["first"]),
        "regarding": _involved(e),
        "reason": e["reason"],
        "note": e["message"],
        "type": e["type"],
        "action": e["action"],
        "reportingController": COMPONENT,
        "reportingInstance": e["actor"],
    }
    if e["count"] > 1:
        out["series"] = {"count": e["count"], "lastObservedTime": _micro(e["last"])}
    return out
