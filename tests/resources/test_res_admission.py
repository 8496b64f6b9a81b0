import copy
from typing import Any

import pytest

from ledger.resources.admission import AdmissionOutcome, InMemoryState, admit, workload_problems
from ledger.resources.models import Resource, Workload, validate_raw

from .conftest import SAMPLES


def obj(kind: str, raw: dict[str, Any]) -> Resource:
    o, problems = validate_raw(kind, raw)
    assert problems == [] and o is not None, problems
    return o


def pc(name: str, value: int, *, default: bool = False, policy: str | None = None) -> Resource:
    raw: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
    if default:
        raw["globalDefault"] = True
    if policy:
        raw["preemptionPolicy"] = policy
    return obj("PriorityClass", raw)


def pod(name: str = "p", **spec: Any) -> Resource:
    return obj(
        "Pod",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}], **spec},
        },
    )


def pg(name: str = "pg", **spec: Any) -> Resource:
    spec.setdefault("schedulingPolicy", {"gang": {"minCount": 2}})
    return obj(
        "PodGroup",
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": spec,
        },
    )


def cpg(name: str = "root", workload: str = "wl", template: str = "root", **spec: Any) -> Resource:
    spec.setdefault("schedulingPolicy", {"gang": {"minGroupCount": 2}})
    spec["workloadRef"] = {"workloadName": workload, "templateName": template}
    return obj(
        "CompositePodGroup",
        {
            "apiVersion": "scheduling.k8s.io/v1alpha3",
            "kind": "CompositePodGroup",
            "metadata": {"name": name},
            "spec": spec,
        },
    )


def workload(name: str = "wl", **spec: Any) -> Resource:
    return obj(
        "Workload",
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "Workload",
            "metadata": {"name": name},
            "spec": spec,
        },
    )


def simple_workload(name: str = "wl") -> Resource:
    return workload(
        name,
        compositePodGroupTemplates=[
            {
                "name": "root",
                "schedulingPolicy": {"gang": {"minGroupCount": 2}},
                "podGroupTemplates": [
                    {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}},
                    {"name": "ps", "schedulingPolicy": {"gang": {"minCount": 1}}},
                ],
            }
        ],
    )


def run(*objects: Resource, state: InMemoryState | None = None) -> AdmissionOutcome:
    return admit(list(objects), state if state is not None else InMemoryState())


def applied(*objects: Resource) -> InMemoryState:
    state = InMemoryState()
    outcome = run(*objects, state=state)
    assert not outcome.refused, outcome.lines()
    state.apply(outcome)
    return state


def only_reason(outcome: AdmissionOutcome) -> str:
    (result,) = outcome.rejected
    return result.message


# ----------------------------------------------------------------------------- priority


def test_builtin_priority_classes_always_exist() -> None:
    out = run(pod(priorityClassName="system-node-critical"), pg(priorityClassName="system-cluster-critical"))
    assert not out.refused
    assert out.results[0].normalized is not None and out.results[1].normalized is not None
    assert out.results[0].normalized["spec"]["priority"] == 2000001000
    assert out.results[1].normalized["spec"]["priority"] == 2000000000


def test_no_class_and_no_default_gives_priority_zero() -> None:
    out = run(pod(), pg())
    for r in out.results:
        assert r.normalized is not None
        assert r.normalized["spec"]["priority"] == 0
        assert "priorityClassName" not in r.normalized["spec"]
        assert r.normalized["spec"]["preemptionPolicy"] == "PreemptLowerPriority"


def test_global_default_fills_name_and_priority_smallest_wins() -> None:
    state = applied(
        pc("low-default", 10, default=True),
        pc("other-default", 5, default=True, policy="Never"),
        pc("not-default", 1),
        simple_workload(),
    )
    for o in (pod(), pg(), cpg()):
        out = run(o, state=state)
        (r,) = out.results
        assert r.normalized is not None, out.lines()
        assert r.normalized["spec"]["priorityClassName"] == "other-default"
        assert r.normalized["spec"]["priority"] == 5
        assert r.normalized["spec"]["preemptionPolicy"] == "Never"


def test_unknown_priority_class_is_rejected_naming_it() -> None:
    for o in (pod(priorityClassName="gold"), pg(priorityClassName="gold")):
        out = run(o)
        assert out.refused
        assert 'spec.priorityClassName: no PriorityClass with name "gold" was found' in only_reason(out)


def test_preset_priority_must_equal_class_value() -> None:
    state = applied(pc("high", 1000))
    assert not run(pg(priorityClassName="high", priority=1000), state=state).refused
    out = run(pg(priorityClassName="high", priority=999), state=state)
    assert out.refused
    assert only_reason(out) == (
        "spec.priority: the integer value of priority (999) must not be provided in pod group spec; "
        'priority admission controller computed 1000 from the PriorityClass "high"'
    )
    out = run(pod(priority=5))
    assert "must not be provided in pod spec; priority admission controller computed 0" in only_reason(out)


def test_preemption_policy_from_class_unless_set() -> None:
    state = applied(pc("never", 10, policy="Never"), pc("plain", 20))
    out = run(
        pod("a", priorityClassName="never"),
        pod("b", priorityClassName="plain"),
        pod("c", priorityClassName="never", preemptionPolicy="PreemptLowerPriority"),
        state=state,
    )
    policies = [r.normalized["spec"]["preemptionPolicy"] for r in out.results if r.normalized]
    assert policies == ["Never", "PreemptLowerPriority", "PreemptLowerPriority"]


def test_priority_class_earlier_in_the_same_request_is_visible() -> None:
    out = run(pc("gold", 500), pod(priorityClassName="gold"))
    assert [r.action for r in out.results] == ["created", "created"]
    assert out.results[1].normalized is not None
    assert out.results[1].normalized["spec"]["priority"] == 500
    out = run(pod(priorityClassName="gold"), pc("gold", 500))  # order matters
    assert out.refused


# ----------------------------------------------------------------------------- Workload rules


def pgt(name: str, policy: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "schedulingPolicy": policy or {"gang": {"minCount": 1}}, **extra}


def cpgt(
    name: str,
    pgs: list[dict[str, Any]] | None = None,
    cpgs: list[dict[str, Any]] | None = None,
    policy: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    t: dict[str, Any] = {"name": name, "schedulingPolicy": policy or {"basic": {}}, **extra}
    if pgs:
        t["podGroupTemplates"] = pgs
    if cpgs:
        t["compositePodGroupTemplates"] = cpgs
    return t


def workload_reasons(**spec: Any) -> list[str]:
    out = run(workload(**spec))
    return [str(r) for res in out.rejected for r in res.reasons]


def test_valid_workload_is_admitted() -> None:
    assert workload_reasons(compositePodGroupTemplates=[cpgt("a", [pgt("b")], [cpgt("c", [pgt("d")])])]) == []


def test_workload_at_most_8_templates_per_list() -> None:
    reasons = workload_reasons(podGroupTemplates=[pgt(f"t{i}") for i in range(9)])
    assert reasons == ["spec.podGroupTemplates: too many: 9: must have at most 8 items"]
    reasons = workload_reasons(compositePodGroupTemplates=[cpgt("root", [pgt(f"t{i}") for i in range(9)])])
    assert reasons == [
        "spec.compositePodGroupTemplates[0].podGroupTemplates: too many: 9: must have at most 8 items"
    ]


def test_workload_exactly_one_template_list() -> None:
    both = workload_reasons(podGroupTemplates=[pgt("a")], compositePodGroupTemplates=[cpgt("b", [pgt("c")])])
    neither = workload_reasons()
    for reasons in (both, neither):
        assert reasons == [
            "spec: must specify exactly one of: `podGroupTemplates`, `compositePodGroupTemplates`"
        ]


def test_workload_depth_limits() -> None:
    depth4 = cpgt("l1", cpgs=[cpgt("l2", cpgs=[cpgt("l3", pgs=[pgt("leaf4")])])])
    assert workload_reasons(compositePodGroupTemplates=[depth4]) == []
    too_deep = cpgt("l1", cpgs=[cpgt("l2", cpgs=[cpgt("l3", cpgs=[cpgt("l4", pgs=[pgt("leaf5")])])])])
    reasons = workload_reasons(compositePodGroupTemplates=[too_deep])
    # upstream reports a tree with a CompositePodGroup template at depth 4 once, at its root
    assert reasons == ["spec.compositePodGroupTemplates[0]: maximum template hierarchy depth is 4"]


def test_workload_cpg_template_needs_children() -> None:
    reasons = workload_reasons(compositePodGroupTemplates=[cpgt("empty")])
    assert reasons == [
        "spec.compositePodGroupTemplates[0]: must have at least one child PodGroupTemplate or "
        "CompositePodGroupTemplate"
    ]


def test_workload_template_names_unique_at_any_depth() -> None:
    reasons = workload_reasons(compositePodGroupTemplates=[cpgt("a", [pgt("x")], [cpgt("b", [pgt("x")])])])
    assert reasons == [
        "spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0].podGroupTemplates[0].name: "
        'Duplicate value: "x"'
    ]


def test_gang_parent_with_basic_child_admitted() -> None:
    # upstream's Workload validation accepts a basic PodGroup template under a gang
    # CompositePodGroup template (its declarative tests build exactly that tree); the basic
    # group counts as ready with one pod
    reasons = workload_reasons(
        compositePodGroupTemplates=[
            cpgt("root", [pgt("basic-child", {"basic": {}})], policy={"gang": {"minGroupCount": 1}})
        ]
    )
    assert reasons == []


def test_all_parent_with_single_child_rejected() -> None:
    reasons = workload_reasons(
        compositePodGroupTemplates=[
            cpgt(
                "root",
                [pgt("implicit-single"), pgt("explicit-all", disruptionMode={"all": {}})],
                disruptionMode={"all": {}},
            )
        ]
    )
    assert reasons == [
        "spec.compositePodGroupTemplates[0].podGroupTemplates[0].disruptionMode: disruptionMode "
        'single is not allowed under the CompositePodGroup template "root" whose disruptionMode '
        "is all"
    ]


def test_workload_problems_is_pure() -> None:
    wl = simple_workload()
    assert isinstance(wl, Workload)
    assert workload_problems(wl) == []


# ----------------------------------------------------------------------------- workloadRef


def test_workload_ref_to_missing_workload_or_template() -> None:
    out = run(pg(workloadRef={"workloadName": "nope", "templateName": "workers"}))
    assert only_reason(out) == (
        'spec.workloadRef.workloadName: forbidden: Workload "nope" not found in namespace "default"'
    )
    state = applied(simple_workload())
    out = run(pg(workloadRef={"workloadName": "wl", "templateName": "nope"}), state=state)
    assert (
        only_reason(out)
        == 'spec.workloadRef.templateName: forbidden: Workload default/wl has no template named "nope"'
    )
    out = run(pg(workloadRef={"workloadName": "wl", "templateName": "root"}), state=state)
    assert "is a CompositePodGroup template, not a PodGroup template" in only_reason(out)
    out = run(cpg(template="workers"), state=state)
    assert "is a PodGroup template, not a CompositePodGroup template" in only_reason(out)
    assert not run(pg(workloadRef={"workloadName": "wl", "templateName": "workers"}), state=state).refused
    assert not run(pg()).refused  # no workloadRef → accepted


def test_workload_defined_earlier_in_the_same_request() -> None:
    out = run(
        simple_workload(),
        cpg(),
        pg(parentCompositePodGroupName="root", workloadRef={"workloadName": "wl", "templateName": "workers"}),
    )
    assert [r.action for r in out.results] == ["created", "created", "created"]


def test_whole_tree_references_one_workload() -> None:
    state = applied(simple_workload("wl"), simple_workload("other"), cpg("root", workload="wl"))
    out = run(
        pg(
            parentCompositePodGroupName="root",
            workloadRef={"workloadName": "other", "templateName": "workers"},
        ),
        state=state,
    )
    assert only_reason(out) == (
        "spec.parentCompositePodGroupName: forbidden: all groups in a hierarchy must reference the same Workload: "
        'parent CompositePodGroup default/root references Workload "wl", this PodGroup references "other"'
    )


# ----------------------------------------------------------------------------- immutability and actions


def test_created_updated_unchanged() -> None:
    state = applied(pg(schedulingPolicy={"gang": {"minCount": 2}}))
    assert [r.action for r in run(pg(schedulingPolicy={"gang": {"minCount": 2}}), state=state).results] == [
        "unchanged"
    ]
    out = run(pg(schedulingPolicy={"gang": {"minCount": 5}}), state=state)  # minCount is mutable
    assert [r.action for r in out.results] == ["updated"]
    assert out.results[0].previous is not None
    assert out.results[0].line == "podgroup.scheduling.k8s.io/pg updated"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"schedulingPolicy": {"basic": {}}}, "spec.schedulingPolicy"),
        ({"schedulingConstraints": {"topology": [{"key": "rack"}]}}, "spec.schedulingConstraints"),
        ({"disruptionMode": {"all": {}}}, "spec.disruptionMode"),
        ({"priorityClassName": "high"}, "spec.priorityClassName"),
        ({"priority": 7}, "spec.priority"),
        ({"preemptionPolicy": "Never"}, "spec.preemptionPolicy"),
        ({"workloadRef": {"workloadName": "wl", "templateName": "workers"}}, "spec.workloadRef"),
        (
            {
                "parentCompositePodGroupName": "root",
                "workloadRef": {"workloadName": "wl", "templateName": "workers"},
            },
            "spec.parentCompositePodGroupName",
        ),
    ],
)
def test_podgroup_immutable_fields(change: dict[str, Any], field: str) -> None:
    state = applied(pc("high", 1000), simple_workload(), pg())
    out = run(pg(**change), state=state)
    assert out.refused
    assert any(r.field == field for r in out.rejected[0].reasons), out.lines()


def test_cpg_immutable_but_min_group_count_mutable() -> None:
    state = applied(simple_workload(), cpg())
    assert (
        run(cpg(schedulingPolicy={"gang": {"minGroupCount": 3}}), state=state).results[0].action == "updated"
    )
    out = run(cpg(schedulingPolicy={"basic": {}}), state=state)
    assert "spec.schedulingPolicy: field is immutable: cannot change from gang to basic" in only_reason(out)
    out = run(cpg(disruptionMode={"all": {}}), state=state)
    assert "spec.disruptionMode: field is immutable" in only_reason(out)


def test_reapply_keeps_server_filled_fields() -> None:
    state = applied(pc("dflt", 3, default=True), pod(), pg())
    # the default class changes later; re-applying the same manifests is still a no-op
    state.put(pc("dflt", 3).normalized())
    out = run(pod(), pg(), state=state)
    assert [r.action for r in out.results] == ["unchanged", "unchanged"]
    # a bound pod (nodeName filled in by the scheduler) re-applied without nodeName is unchanged
    stored = dict(state.objects[("Pod", "default", "p")])
    stored["spec"] = {**stored["spec"], "nodeName": "node-1"}
    state.put(stored)
    assert run(pod(), state=state).results[0].action == "unchanged"
    out = run(pod(nodeName="node-2"), state=state)
    assert "spec.nodeName: field is immutable" in only_reason(out)


def test_pod_spec_is_immutable_except_gates_tolerations_images() -> None:
    gated = {"schedulingGates": [{"name": "a"}, {"name": "b"}]}
    state = applied(pod(**gated))
    assert run(pod(schedulingGates=[{"name": "b"}]), state=state).results[0].action == "updated"
    out = run(pod(schedulingGates=[{"name": "a"}, {"name": "b"}, {"name": "c"}]), state=state)
    assert (
        only_reason(out)
        == 'spec.schedulingGates: only deletion is allowed, but found new scheduling gate "c"'
    )
    out = run(pod(nodeSelector={"disk": "ssd"}, **gated), state=state)
    assert only_reason(out).startswith("spec.nodeSelector: field is immutable")
    tolerations = [{"key": "k", "operator": "Exists"}]
    assert run(pod(tolerations=tolerations, **gated), state=state).results[0].action == "updated"
    changed = obj(
        "Pod",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}], **gated},
        },
    )
    assert "spec.containers: field is immutable" in only_reason(run(changed, state=state))
    relabeled = obj(
        "Pod",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "labels": {"x": "y"}},
            "spec": {
                "containers": [{"name": "c", "image": "new", "resources": {"requests": {"cpu": "1"}}}],
                **gated,
            },
        },
    )
    assert run(relabeled, state=state).results[0].action == "updated"


def test_node_fields_are_mutable() -> None:
    node = SAMPLES["Node"]
    state = applied(obj("Node", node))
    changed = copy.deepcopy(node)
    changed["spec"] = {}
    changed["status"]["allocatable"]["cpu"] = "2"
    out = run(obj("Node", changed), state=state)
    assert [r.action for r in out.results] == ["updated"]


def test_priority_class_value_is_immutable() -> None:
    state = applied(pc("high", 1000))
    assert only_reason(run(pc("high", 2000), state=state)) == "value: field is immutable (was 1000, got 2000)"
    assert run(pc("high", 1000, default=True), state=state).results[0].action == "updated"


def test_workload_templates_immutable_except_minimums() -> None:
    state = applied(simple_workload())
    bigger = workload(
        compositePodGroupTemplates=[
            {
                "name": "root",
                "schedulingPolicy": {"gang": {"minGroupCount": 1}},
                "podGroupTemplates": [
                    {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}},
                    {"name": "ps", "schedulingPolicy": {"gang": {"minCount": 1}}},
                ],
            }
        ]
    )
    assert run(bigger, state=state).results[0].action == "updated"
    fewer = workload(
        compositePodGroupTemplates=[
            {
                "name": "root",
                "schedulingPolicy": {"gang": {"minGroupCount": 1}},
                "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}}],
            }
        ]
    )
    assert (
        "spec.compositePodGroupTemplates[0].podGroupTemplates: field is immutable: a template cannot be removed"
        in only_reason(run(fewer, state=state))
    )


# ----------------------------------------------------------------------------- request refusal


def test_any_rejection_refuses_the_whole_request() -> None:
    out = run(pc("gold", 10), pod("ok", priorityClassName="gold"), pg("pg9", priorityClassName="platinum"))
    assert out.refused
    assert out.changes == []
    assert [r.action for r in out.results] == ["created", "created", "rejected"]
    record = out.rejection_record()
    assert record["objects"] == [
        {"kind": "PriorityClass", "namespace": None, "name": "gold"},
        {"kind": "Pod", "namespace": "default", "name": "ok"},
        {"kind": "PodGroup", "namespace": "default", "name": "pg9"},
    ]
    assert record["rejected"] == [
        {
            "kind": "PodGroup",
            "namespace": "default",
            "name": "pg9",
            "reasons": [
                {
                    "field": "spec.priorityClassName",
                    "message": 'no PriorityClass with name "platinum" was found',
                }
            ],
            "message": 'spec.priorityClassName: no PriorityClass with name "platinum" was found',
        }
    ]
    assert str(out.rejected[0]) == (
        'error: PodGroup default/pg9: spec.priorityClassName: no PriorityClass with name "platinum" was found'
    )


def test_accepted_request_lists_changes_in_order() -> None:
    out = run(pc("gold", 10), pod("a", priorityClassName="gold"))
    assert [r.line for r in out.changes] == ["priorityclass.scheduling.k8s.io/gold created", "pod/a created"]


def test_one_elastic_quota_per_namespace_and_one_tree() -> None:
    eq = copy.deepcopy(SAMPLES["ElasticQuota"])
    state = applied(obj("ElasticQuota", eq))
    eq["metadata"]["name"] = "quota-a2"
    assert 'namespace "team-a" already has the ElasticQuota "quota-a"' in only_reason(
        run(obj("ElasticQuota", eq), state=state)
    )
    tree = copy.deepcopy(SAMPLES["ElasticQuotaTree"])
    state = applied(obj("ElasticQuotaTree", tree))
    assert run(obj("ElasticQuotaTree", tree), state=state).results[0].action == "unchanged"
    tree["metadata"]["name"] = "second"
    assert "only one ElasticQuotaTree per cluster" in only_reason(
        run(obj("ElasticQuotaTree", tree), state=state)
    )
