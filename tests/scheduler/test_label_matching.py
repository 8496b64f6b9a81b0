"""Label-requirement matching is written once, in the model (``Requirement.matches``,
``NodeSelectorTerm.matches``, ``LabelSelector.matches``, ``PodDisruptionBudget.matches``): the
operators with Kubernetes semantics, the label-selector rule (no Gt/Lt), the vectorized NodeAffinity
masks agreeing with it node by node, and no other module of the core spelling the operators out."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from scheduler.model import (
    LabelSelector,
    Node,
    NodeSelectorTerm,
    Pod,
    PodAffinityTerm,
    PodDisruptionBudget,
    Requirement,
    parse_int64,
)
from scheduler.plugins import node_affinity
from scheduler.plugins.pod_index import selector_matches, term_matches
from scheduler.snapshot import Snapshot

ROOT = Path(__file__).resolve().parents[2]
LABELS = {"zone": "a", "gen": "3", "bad": "x3", "big": "9223372036854775808"}


@pytest.mark.parametrize(
    ("req", "want"),
    [
        (Requirement("zone", "In", ("a", "b")), True),
        (Requirement("zone", "In", ("b",)), False),
        (Requirement("rack", "In", ("a",)), False),
        (Requirement("zone", "NotIn", ("b",)), True),
        (Requirement("zone", "NotIn", ("a",)), False),
        (Requirement("rack", "NotIn", ("a",)), True),  # absent key: NotIn matches
        (Requirement("zone", "Exists"), True),
        (Requirement("rack", "Exists"), False),
        (Requirement("rack", "DoesNotExist"), True),
        (Requirement("zone", "DoesNotExist"), False),
        (Requirement("gen", "Gt", ("2",)), True),
        (Requirement("gen", "Gt", ("3",)), False),
        (Requirement("gen", "Lt", ("4",)), True),
        (Requirement("gen", "Lt", ("-4",)), False),
        (Requirement("gen", "Gt", ("+2",)), True),  # strconv.ParseInt takes a sign
        (Requirement("gen", "Gt", ("2", "1")), False),  # not exactly one value
        (Requirement("gen", "Gt", ("two",)), False),  # the value does not parse
        (Requirement("bad", "Lt", ("9",)), False),  # the label does not parse
        (Requirement("big", "Gt", ("1",)), False),  # beyond int64
        (Requirement("rack", "Gt", ("1",)), False),  # absent key
        (Requirement("zone", "Matches", ("a",)), False),  # unknown operator
    ],
)
def test_requirement_operators(req: Requirement, want: bool) -> None:
    assert req.matches(LABELS) is want


def test_parse_int64_is_strconv() -> None:
    assert [parse_int64(v) for v in ("7", "-7", "+7", "", "+", "7.0", "٣", str(2**63 - 1), str(2**63))] == [
        7,
        -7,
        7,
        None,
        None,
        None,
        None,
        2**63 - 1,
        None,
    ]


def test_node_selector_terms() -> None:
    assert not NodeSelectorTerm().matches(LABELS)  # a term without requirements matches nothing
    both = NodeSelectorTerm((Requirement("zone", "In", ("a",)), Requirement("gen", "Gt", ("1",))))
    assert both.matches(LABELS)
    assert not NodeSelectorTerm((*both.match_expressions, Requirement("rack", "Exists"))).matches(LABELS)
    assert node_affinity.node_matches(LABELS, {"zone": "a"}, (both,))
    assert not node_affinity.node_matches(LABELS, {"zone": "b"}, (both,))
    assert not node_affinity.node_matches(LABELS, {}, (NodeSelectorTerm(),))
    assert node_affinity.node_matches(LABELS, {}, ())


def test_label_selectors_pods_and_budgets_share_the_rule() -> None:
    sel = LabelSelector((("zone", "a"),), (Requirement("rack", "DoesNotExist"),))
    assert sel.matches(LABELS) and selector_matches(sel, LABELS)
    assert LabelSelector().matches(LABELS)  # empty: everything
    assert not selector_matches(None, LABELS)  # None: nothing
    assert not LabelSelector((("zone", "b"),)).matches(LABELS)
    # a label selector has no Gt/Lt: such a requirement (refused by validation) matches nothing,
    # although the same requirement in a node selector term matches
    gt = Requirement("gen", "Gt", ("1",))
    assert gt.matches(LABELS) and NodeSelectorTerm((gt,)).matches(LABELS)
    assert not LabelSelector(match_expressions=(gt,)).matches(LABELS)

    pod = Pod("ns", "p", labels=LABELS)
    pdb = PodDisruptionBudget("ns", "b", {"zone": "a"}, (Requirement("gen", "In", ("3",)),), min_available=1)
    assert pdb.matches(pod)
    assert not PodDisruptionBudget("other", "b", {"zone": "a"}).matches(pod)  # namespace
    assert not PodDisruptionBudget("ns", "b", {"zone": "b"}).matches(pod)
    assert not PodDisruptionBudget("ns", "b", match_expressions=(gt,)).matches(pod)

    term = PodAffinityTerm("zone", sel)
    assert term_matches(term, "ns", pod)
    assert not term_matches(term, "other", pod)  # the owner's namespace only


def test_vectorized_requirement_masks_equal_requirement_matches() -> None:
    rng = random.Random(29)
    values = ["1", "2", "10", "-3", "+4", "x", "", "a", "9223372036854775807", "9223372036854775808"]
    snap = Snapshot()
    nodes = []
    for i in range(60):
        labels = {k: rng.choice(values) for k in ("k1", "k2", "k3") if rng.random() < 0.7}
        nodes.append(Node(f"n{i:02d}", {"cpu": 1000}, labels, seq=i))
        snap.upsert_node(nodes[-1])
    snap.refresh()
    ops = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"]
    checked = 0
    for _ in range(400):
        op = rng.choice(ops)
        n_values = rng.choice((0, 1, 1, 2))
        req = Requirement(rng.choice(("k1", "k2", "k3", "k4")), op, tuple(rng.sample(values, n_values)))
        mask = node_affinity.requirement_mask(snap, req)
        want = [req.matches(nd.labels) for nd in snap.nodes]
        assert mask.tolist() == want, req
        checked += sum(want)
    assert checked > 0


def _operator_comparisons(path: Path) -> list[int]:
    """Lines of ``path`` that compare something with one of the operators only a matcher needs
    (``"DoesNotExist"``, ``"Gt"``, ``"Lt"``)."""
    tree = ast.parse(path.read_text())
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Compare):
            consts = [c for c in [n.left, *n.comparators] if isinstance(c, ast.Constant)]
            consts += [
                e
                for c in n.comparators
                if isinstance(c, (ast.Tuple, ast.Set, ast.List))
                for e in c.elts
                if isinstance(e, ast.Constant)
            ]
            if any(c.value in ("DoesNotExist", "Gt", "Lt") for c in consts):
                out.append(n.lineno)
    return out


def test_operators_are_interpreted_in_the_model_only() -> None:
    """The model holds the one implementation; NodeAffinity's masks are its vectorized form
    (checked equal above). No other module of the core interprets the operators."""
    allowed = {ROOT / "scheduler" / "model.py", ROOT / "scheduler" / "plugins" / "node_affinity.py"}
    found = {
        str(p.relative_to(ROOT)): lines
        for p in sorted((ROOT / "scheduler").rglob("*.py"))
        if p not in allowed and (lines := _operator_comparisons(p))
    }
    assert found == {}
    assert _operator_comparisons(ROOT / "scheduler" / "model.py")  # the guard can see a matcher
