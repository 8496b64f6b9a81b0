"""What an unchanged retry is compared on (issue 14's retry compaction): a plain pod's verdict and
a group's verdict with its diagnosis, each hashed to a short, order-independent fingerprint."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson


def verdict_fingerprint(data: Mapping[str, Any]) -> str:
    """What a plain pod's retry is compared on: its PodUnschedulable reason, message and codes."""
    key = {
        "reason": data.get("reason"),
        "message": data.get("message"),
        "codes": list(data.get("codes") or []),
    }
    return hashlib.sha256(orjson.dumps(key, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def diagnosis_fingerprint(data: Mapping[str, Any]) -> str:
    """What a retry is compared on: the verdict and the whole compact diagnosis."""
    key = {"reason": data.get("reason"), "message": data.get("message"), "diagnosis": data.get("diagnosis")}
    if data.get("why"):  # the structured diagnosis (issue 21): room per domain changes with capacity
        key["why"] = data["why"]
    if data.get("exclusions"):  # what the scheduler saw (issue 31): a retry points to it
        key["exclusions"] = data["exclusions"]
    return hashlib.sha256(orjson.dumps(key, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
