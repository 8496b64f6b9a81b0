"""The bridge's content-addressed decision event ids: ``event_uuid`` is ``uuid.uuid5`` under
``EVENT_NS``, value for value (a redo of a cycle keeps producing the ids earlier versions stored)."""

from __future__ import annotations

import uuid

from scheduler.edge.bridge import EVENT_NS, event_uuid


def test_event_uuid_is_uuid5_under_the_event_namespace() -> None:
    names = ["", "0:1:1767225600.0:-1:SchedulingCycleCompleted:scheduler/cycles:" + "ab" * 32]
    names += [f"{i}:{i * 7}:1767225600.{i}:{i % 3}:PodBound:pod/ns/p{i}:ünï€😀" for i in range(50)]
    for name in names:
        got, want = event_uuid(name), uuid.uuid5(EVENT_NS, name)
        assert got == want and got.int == want.int and got.version == 5
        assert str(got) == str(want) and hash(got) == hash(want) and got.is_safe == want.is_safe
