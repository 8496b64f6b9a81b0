"""Every stream of the log, named in one place.

A stream name is ``<category>/<id>`` (Message DB's category-id idea): the category says what
the stream is about, the id which object. Readers select by category with a prefix
(``sched/pod/``), so a name is never spelled anywhere else.

| category | written by | id |
|---|---|---|
| ``<kind>`` (``pod``, ``node``, ``podgroup``, ...: the kind in lower case) | apply/delete | ``ns/name``, or ``name`` for cluster-scoped kinds |
| ``sched/pod``, ``sched/podgroup``, ``sched/compositepodgroup`` | the scheduler | ``ns/name`` |
| ``sched/cycles``, ``sched/starts`` | the scheduler (one stream each) | - |
| ``admission/rejections`` | refused requests (one stream) | - |
| ``attach/pod``, ``attach/binding``, ``attach/eviction``, ``attach/podgroup``, ``attach/compositepodgroup`` | ``attach`` (what it observed or sent) | ``ns/name`` |
"""

from __future__ import annotations

SCHED = "sched"
ATTACH = "attach"
CYCLES = "sched/cycles"
STARTS = "sched/starts"
REJECTIONS = "admission/rejections"

__all__ = [
    "ATTACH",
    "CYCLES",
    "REJECTIONS",
    "SCHED",
    "STARTS",
    "attach",
    "category",
    "object_stream",
    "scheduler",
]


def object_stream(kind: str, namespace: str | None, name: str) -> str:
    """The input stream of one object: ``pod/ns/name``; ``node/name`` for a cluster-scoped kind
    (``namespace`` None or empty)."""
    k = kind.lower()
    return f"{k}/{namespace}/{name}" if namespace else f"{k}/{name}"


def scheduler(kind: str, key: str) -> str:
    """The scheduler's stream about one object (``kind``: pod, podgroup or compositepodgroup, in
    any case; ``key``: ``ns/name``)."""
    return f"{SCHED}/{kind.lower()}/{key}"


def attach(what: str, namespace: str, name: str) -> str:
    """``attach``'s stream about one object: what it observed or sent to a cluster (``what``:
    pod, binding, eviction, or a group kind in lower case)."""
    return f"{ATTACH}/{what.lower()}/{namespace}/{name}"


def category(stream: str) -> str:
    """The category of a stream: ``pod`` for ``pod/ns/x``, ``sched/pod`` for ``sched/pod/ns/x``."""
    head, _, rest = stream.partition("/")
    if head in (SCHED, ATTACH, "admission") and rest:
        return f"{head}/{rest.partition('/')[0]}"
    return head
