"""Explain's words (issue 31): podledger's reading of upstream's condition text, preemption as
the verdict, the group and its pods tell it, and the recorded per-node exclusions in words."""

from __future__ import annotations

import re
from typing import Any

_MIN_COUNT = re.compile(
    r"minCount \((\d+)\) (?:cannot be|is not yet) satisfied: (\d+) scheduled, (\d+) remaining"
)
_PLACEMENTS = re.compile(r"0/(\d+) placements are available")


def _read_min_count(text: str, where: str = "") -> str | None:
    m = _MIN_COUNT.search(text)
    if m is None:
        return None
    scheduled, remaining = int(m.group(2)), int(m.group(3))
    total = scheduled + 1 + remaining
    out = f"pod {scheduled + 1} of {total} fits nowhere{where}"
    if scheduled:
        out = f"{scheduled} of {total} pod(s) placed, then " + out
    return out + (f"; {remaining} not tried" if remaining else "")


def readings(condition: dict[str, Any] | None, last: dict[str, Any] | None, pods: list[Any]) -> list[str]:
    """podledger's reading of upstream's condition text (which stays verbatim): upstream's
    ``minCount (2) cannot be satisfied: 0 scheduled, 1 remaining`` counts the pods placed before
    the first that fitted nowhere and the ones never tried after it; read as ``pod 1 of 2 fits
    nowhere in rack-1; 1 not tried``, per placement evaluated. ``0/N placements are
    available``: none of the N candidate domains holds the whole group."""
    data = (last or {}).get("data") or {}
    msg = data.get("message") or (condition or {}).get("message") or ""
    out: list[str] = []
    lines = ((data.get("diagnosis") or {}).get("placements") or {}).get("results") or []
    for line in lines:
        where, _, text = line.partition(": ")
        dom = where.rsplit("=", 1)[-1] if "=" in where else where
        read = _read_min_count(text, f" in {dom}")
        if read:
            out.append(read)
    if not lines:
        read = _read_min_count(msg)
        if read:
            out.append(read)
    places = _PLACEMENTS.search(msg)
    if places:
        key = ((data.get("why") or {}).get("need") or {}).get("topologyKey")
        dom = f"{key} domain(s)" if key else "placement(s)"
        out.append(f"none of the {int(places.group(1))} candidate {dom} holds the whole group")
    return out


def preemption_of(
    condition: dict[str, Any] | None, last: dict[str, Any] | None, preempted: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """Preemption as the verdict, the group and its pods all tell it: taken (victims), tried
    and refused (the PostFilter's message in the condition or in the last attempt, or its
    reason codes), or not attempted."""
    data = (last or {}).get("data") or {}
    codes = data.get("codes") or []
    tried = ""
    for msg in ((condition or {}).get("message") or "", data.get("message") or ""):
        for marker in ("pod group preemption:", "preemption:"):
            if marker in msg:
                # the whole clause: "elastic quota preemption: ...", not its tail
                at = msg.find(marker)
                start = msg.rfind(", ", 0, at)
                head = msg[start + 2 : at] if start >= 0 else ""
                tried = msg[start + 2 :] if head and "." not in head and len(head) <= 40 else msg[at:]
                break
        if tried:
            break
    if not tried and "PreemptionNoVictims" in codes:
        tried = "preemption was tried and found no victims that would help"
    if not tried and "PreemptionNotEligible" in codes:
        tried = "preemption was not allowed (preemptionPolicy Never, or no quota)"
    if preempted or tried:
        return {
            "tried": True,
            "message": tried,
            "taken": bool(preempted),
            "victims": [
                {
                    "victim": e["data"]["victim"],
                    "node": e["data"]["node"],
                    "rule": e["data"]["rule"],
                    "unit": e["data"]["unit"],
                    "position": e["position"],
                }
                for e in preempted
            ],
        }
    if last is not None and last["type"] == "PodGroupUnschedulable":
        return {
            "tried": False,
            "message": "no preemption was attempted (or none was recorded) for the last attempt",
            "taken": False,
            "victims": [],
        }
    return None


def exclusion_lines(rec: dict[str, Any], *, closest_only: bool = False) -> list[str]:
    """The recorded exclusions in words: per evaluated domain (closest first) how many of the
    pending pods fit and which nodes excluded the first that did not, per plugin, stage and
    reason; the nodes not evaluated; the representative nodes. ``closest_only``: the closest
    domain's lines (explain's ``Why``)."""
    pods = rec.get("pods")
    doms = rec.get("domains") or []
    lines: list[str] = []
    for i, (dom, n, fit, tried) in enumerate(doms):
        if closest_only and i > 0:
            break
        tag = " (closest)" if i == 0 else ""
        if tried > fit:
            rest = (pods or 0) - tried
            head = f"{dom}{tag}: {fit} of {pods} pod(s) fit; pod {tried} fits on none of its {n} node(s)"
            head += f"; {rest} not tried" if rest else ""
        else:
            head = f"{dom}{tag}: all {fit} pending pod(s) fit on its {n} node(s) node by node"
        lines.append(head)
        lines.extend(
            f"  {c}/{n} node(s): {plugin} ({stage}): {reason}"
            for d, plugin, stage, reason, c in rec.get("counts") or []
            if d == dom
        )
    if not closest_only:
        lines.extend(
            f"{c} node(s) not evaluated: {plugin} ({stage}): {reason}"
            for d, plugin, stage, reason, c in rec.get("counts") or []
            if d == "(other)"
        )
        if rec.get("sample"):
            lines.append(
                "representative nodes: "
                + "; ".join(
                    f"{node}: {plugin} ({stage}): {reason}" for node, plugin, stage, reason in rec["sample"]
                )
            )
    return lines


__all__ = ["exclusion_lines", "preemption_of", "readings"]
