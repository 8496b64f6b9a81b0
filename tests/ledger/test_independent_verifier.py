"""docs/transparency.md defines the event hash and the proofs completely: a verifier written from
the docs alone (tests/ledger/independent_verifier.py, no podledger import) agrees with podledger
on the canonical JSON of any value, on the worked example of the docs, and accepts every proof
``prove`` makes for a log of awkward events -- and rejects each one changed in any field."""

from __future__ import annotations

import copy
import json
import math

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger import anchor
from ledger import transparency as tl
from ledger.store import NewEvent
from tests.ledger_helpers import append_events

from . import independent_verifier as outside

_INTS = st.integers(min_value=-(2**63), max_value=2**64 - 1)
_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)  # no lone surrogates
_FLOATS = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [1e-5, 1e-6, 1.5e-6, 1e-7, 1e15, 1e16, 9.999999999999998e15, -0.0, 0.1, 100.0, 5e-324]
)
_JSON = st.recursive(
    st.none() | st.booleans() | _INTS | _FLOATS | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(_JSON)
def test_canonical_json_from_the_docs_is_podledgers(value):
    assert outside.canonical(value) == orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def test_the_worked_example_of_the_docs():
    event = {
        "stream": "note/1",
        "version": 1,
        "type": "NoteRecorded",
        "schema_version": 1,
        "event_id": "0f8fad5b-d9cb-469f-a165-70867728950e",
        "data": {"text": 'héllo "x"', "attributes": {"b": 1, "a": [0.5, 1e-7, True, None]}},
        "meta": {"actor": "cli"},
        "effective_at": "2026-12-05T10:00:00Z",
        "recorded_at": "2026-12-05T10:00:00.123456Z",
        "prev_hash": "00" * 32,
    }
    assert (
        outside.event_hash(event, 2).hex()
        == "283a34151bcece45c3729d49d42f81970e9d1f33978c5b49207f232bdfee589c"
    )
    assert (
        outside.event_hash(event, 1).hex()
        == "f1eb94a03507a9688c2c94c2f084925238cca594aa8a2d76b20bd028c0976602"
    )


AWKWARD = ['q"uote', "back\\slash", "tab\tnew\nline", "ctl\x01\x1f\x7f", "ünï€😀", "</script>", ""]


def _events() -> list[NewEvent]:
    out = []
    for i, s in enumerate(AWKWARD):
        attributes = {
            s: i,
            "floats": [0.1, 1e-7, 1e-5, 1e16, 123.0, -0.0, math.pi],
            "big": 2**63,
            s + "2": None,
        }
        out.append(
            NewEvent(f"note/{s}/{i}", "NoteRecorded", {"text": s, "attributes": attributes}, meta={"why": s})
        )
    return out


def test_proofs_verify_outside_and_changed_ones_do_not(database):
    append_events(database, [_events()[0]])  # one server call
    append_events(database, _events()[1:4])  # a batch
    append_events(
        database, _events()[4:] + [NewEvent(f"n/{i}", "NoteRecorded", {"text": "x"}) for i in range(70)]
    )
    signer = tl.Signer.generate("podledger")
    key = signer.verifier.text()
    size = anchor.make_checkpoint(database, signer).checkpoint.size
    assert size == 77
    for position in (1, 2, 4, 5, 7, 50, 77):
        # the document as an outsider gets it: JSON text, read with the standard library
        proof = json.loads(orjson.dumps(anchor.prove(database, position, signer.verifier)))
        assert proof["hash_version"] == 2 and "recorded_at" in proof["event"]
        assert outside.verify_proof(proof, key) == ("podledger", size)
        for path, value in (
            (("event", "recorded_at"), "2020-01-01T00:00:00+00:00"),
            (("event", "effective_at"), "2020-01-01T00:00:00+00:00"),
            (("event", "data", "text"), "changed"),
            (("event", "meta", "why"), "changed"),
            (("event", "version"), 9),
            (("event", "prev_hash"), "11" * 32),
            (("position",), position + 1),
            (("leaf_index",), (proof["leaf_index"] + 1) % size),
            (("hash_version",), 1),
        ):
            bad = copy.deepcopy(proof)
            target = bad
            for k in path[:-1]:
                target = target[k]
            target[path[-1]] = value
            with pytest.raises(outside.ProofError):
                outside.verify_proof(bad, key)
    with pytest.raises(outside.ProofError, match="not signed by this key"):
        outside.verify_proof(proof, tl.Signer.generate("podledger").verifier.text())
