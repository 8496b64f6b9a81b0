"""Validation parity with upstream: upstream's own validation test cases, as facts, run through podledger.

Each case is an upstream test case (kubernetes/kubernetes at the tree the 1.37 scheduler comes
from; the file named in ``SOURCES``): the object it builds, and the field paths upstream refuses it
at (``()`` when upstream accepts it). Every upstream acceptance must be accepted here, every
refusal refused with (at least) upstream's paths. A path marked ``UPDATE`` comes from an
update-only check (``immutable`` / ``update``): podledger compares with the stored object only
once the new object is valid, so such a path is not reached when validation already refuses.

Not carried over: cases that switch a feature gate off (podledger serves every gate on), the
``no namespace`` cases (a manifest without a namespace gets ``default``, as ``kubectl`` fills
it in), and PodGroup/CompositePodGroup ``gang`` minimum updates, which upstream refuses
(``schedulingPolicy`` is immutable) and podledger allows for elastic Jobs (``DIFFERENCES``,
docs/upstream.md).
"""

from __future__ import annotations

import copy

import pytest

from ledger.resources.admission import InMemoryState, admit, workload_problems
from ledger.resources.models import Workload, validate_raw
from tests.resources.parity_builders import (
    P0,
    Raw,
    _gang,
    add_claims,
    add_cpg,
    add_nested_cpg,
    add_nested_pg,
    add_pg,
    add_topology,
    clear_pgs,
    many_nested_cpgs,
    many_nested_pgs,
    many_pgs,
    mk_cpg,
    mk_job,
    mk_pg,
    mk_valid_workload,
    mk_workload,
    pg_claims,
    pg_topology,
    pgts,
    set_controller_ref,
    set_cpg,
    set_meta,
    set_nested_pg,
    set_pg,
    set_spec,
    tree,
)

SOURCES = {
    "wl-dv": "pkg/registry/scheduling/workload/declarative_validation_test.go (testDeclarativeValidate)",
    "wl-dv-update": "pkg/registry/scheduling/workload/declarative_validation_test.go (testDeclarativeValidateUpdate)",
    "wl": "pkg/apis/scheduling/validation/validation_test.go (TestValidateWorkload)",
    "cpg-dv": "pkg/registry/scheduling/compositepodgroup/declarative_validation_test.go",
    "cpg": "pkg/apis/scheduling/validation/validation_test.go (TestValidateCompositePodGroup)",
    "pg-dv": "pkg/registry/scheduling/podgroup/declarative_validation_test.go (rules the PodGroup API kept)",
    "pg": "pkg/apis/scheduling/validation/validation_test.go (TestValidatePodGroup)",
    "job": "k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder (Job's spec.scheduling example)",
}

UPDATE = "update-only:"  # prefix of a path reported by an update-only check


C0 = "spec.compositePodGroupTemplates[0]"
N0 = f"{C0}.podGroupTemplates[0]"
LONG_PREFIX_OK = "a" * 253 + "/" + "b" * 63
SUBDOMAIN_MSG_NAME = "w" * 254


def claim(name: str, ref: str | None = None, tpl: str | None = None) -> Raw:
    out: Raw = {"name": name}
    if ref is not None:
        out["resourceClaimName"] = ref
    if tpl is not None:
        out["resourceClaimTemplateName"] = tpl
    return out


# --------------------------------------------------------------------------- the facts

# One case per line, as in upstream's tables.
# fmt: off
# (source, upstream case name, manifest, upstream's refusal paths; () = accepted)
CREATE: list[tuple[str, str, Raw, tuple[str, ...]]] = [
    ("wl-dv", "valid", mk_valid_workload(), ()),
    ("wl-dv", "empty podGroupTemplates", mk_valid_workload(clear_pgs), ("spec",)),
    ("wl-dv", "too many podGroupTemplates", mk_valid_workload(many_pgs(9)), ("spec.podGroupTemplates",)),
    ("wl-dv", "empty podGroupTemplate name", mk_valid_workload(set_pg(0, name="")), (f"{P0}.name",)),
    ("wl-dv", "invalid podGroupTemplate name", mk_valid_workload(set_pg(0, name="Invalid_Name")), (f"{P0}.name",)),
    ("wl-dv", "duplicate podGroupTemplate names", mk_valid_workload(add_pg("main")), ("spec.podGroupTemplates[1]",)),
    ("wl-dv", "gang minCount zero", mk_valid_workload(set_pg(0, schedulingPolicy=_gang(0))), (f"{P0}.schedulingPolicy.gang.minCount",)),
    ("wl-dv", "gang minCount negative", mk_valid_workload(set_pg(0, schedulingPolicy=_gang(-1))), (f"{P0}.schedulingPolicy.gang.minCount",)),
    ("wl-dv", "valid with controllerRef", mk_valid_workload(set_controller_ref("apps", "Deployment", "my-deployment")), ()),
    ("wl-dv", "controllerRef with empty APIGroup", mk_valid_workload(set_controller_ref("", "Pod", "my-pod")), ()),
    ("wl-dv", "controllerRef invalid APIGroup", mk_valid_workload(set_controller_ref("invalid_api_group", "Deployment", "d")), ("spec.controllerRef.apiGroup",)),
    ("wl-dv", "controllerRef too long APIGroup", mk_valid_workload(set_controller_ref("g" * 254, "Deployment", "d")), ("spec.controllerRef.apiGroup",)),
    ("wl-dv", "controllerRef missing kind", mk_valid_workload(set_controller_ref("apps", "", "d")), ("spec.controllerRef.kind",)),
    ("wl-dv", "controllerRef invalid kind with slash", mk_valid_workload(set_controller_ref("apps", "Deploy/ment", "d")), ("spec.controllerRef.kind",)),
    ("wl-dv", "controllerRef missing name", mk_valid_workload(set_controller_ref("apps", "Deployment", "")), ("spec.controllerRef.name",)),
    ("wl-dv", "controllerRef invalid name", mk_valid_workload(set_controller_ref("apps", "Deployment", "/invalid-name")), ("spec.controllerRef.name",)),
    ("wl-dv", "controllerRef invalid kind with percent", mk_valid_workload(set_controller_ref("apps", "Deploy%ment", "d")), ("spec.controllerRef.kind",)),
    ("wl-dv", "controllerRef invalid name with percent", mk_valid_workload(set_controller_ref("apps", "Deployment", "my%deployment")), ("spec.controllerRef.name",)),
    ("wl-dv", "policy with neither basic nor gang", mk_valid_workload(set_pg(0, schedulingPolicy={})), (f"{P0}.schedulingPolicy",)),
    ("wl-dv", "policy with both basic and gang", mk_valid_workload(set_pg(0, schedulingPolicy={"basic": {}, **_gang(1)})), (f"{P0}.schedulingPolicy",)),
    ("wl-dv", "valid with basic policy", mk_valid_workload(set_pg(0, schedulingPolicy={"basic": {}})), ()),
    ("wl-dv", "valid with schedulingConstraints", mk_valid_workload(add_topology(0, "foo")), ()),
    ("wl-dv", "valid with empty schedulingConstraints", mk_valid_workload(set_pg(0, schedulingConstraints={})), ()),
    ("wl-dv", "with multiple topology constraints", mk_valid_workload(add_topology(0, "foo"), add_topology(0, "bar")), (f"{P0}.schedulingConstraints.topology",)),
    ("wl-dv", "with empty topology key", mk_valid_workload(add_topology(0, "")), (f"{P0}.schedulingConstraints.topology[0].key",)),
    ("wl-dv", "valid with topology key with DNS prefix", mk_valid_workload(add_topology(0, "example.com/Foo")), ()),
    ("wl-dv", "valid with topology key with prefix with max length", mk_valid_workload(add_topology(0, LONG_PREFIX_OK)), ()),
    ("wl-dv", "with topology key with prefix exceeding max prefix length", mk_valid_workload(add_topology(0, "a" * 254 + "/foo")), (f"{P0}.schedulingConstraints.topology[0].key",)),
    ("wl-dv", "with topology key with prefix exceeding max name length", mk_valid_workload(add_topology(0, "foo/" + "b" * 64)), (f"{P0}.schedulingConstraints.topology[0].key",)),
    ("wl-dv", "with topology key without prefix exceeding max length", mk_valid_workload(add_topology(0, "b" * 64)), (f"{P0}.schedulingConstraints.topology[0].key",)),
    ("wl-dv", "with topology key with invalid characters", mk_valid_workload(add_topology(0, "Example.com/Foo")), (f"{P0}.schedulingConstraints.topology[0].key",)),
    ("wl-dv", "disruption mode single", mk_valid_workload(set_pg(0, disruptionMode={"single": {}})), ()),
    ("wl-dv", "disruption mode all", mk_valid_workload(set_pg(0, disruptionMode={"all": {}})), ()),
    ("wl-dv", "disruption mode with neither single nor all", mk_valid_workload(set_pg(0, disruptionMode={})), (f"{P0}.disruptionMode",)),
    ("wl-dv", "disruption mode with both single and all", mk_valid_workload(set_pg(0, disruptionMode={"single": {}, "all": {}})), (f"{P0}.disruptionMode",)),
    ("wl-dv", "valid priorityClassName", mk_valid_workload(set_pg(0, priorityClassName="high-priority")), ()),
    ("wl-dv", "invalid priorityClassName", mk_valid_workload(set_pg(0, priorityClassName="high/priority")), (f"{P0}.priorityClassName",)),
    ("wl-dv", "valid priority", mk_valid_workload(set_pg(0, priority=1000)), ()),
    ("wl-dv", "valid negative priority", mk_valid_workload(set_pg(0, priority=-2147483648)), ()),
    ("wl-dv", "too high priority", mk_valid_workload(set_pg(0, priority=1_000_000_001)), (f"{P0}.priority",)),
    ("wl-dv", "valid PreemptionPolicy", mk_valid_workload(set_pg(0, preemptionPolicy="PreemptLowerPriority")), ()),
    ("wl-dv", "invalid PreemptionPolicy", mk_valid_workload(set_pg(0, preemptionPolicy="Invalid")), (f"{P0}.preemptionPolicy",)),
    ("wl-dv", "ok resourceClaimName reference", mk_valid_workload(add_claims(claim("claim", ref="resource-claim"))), ()),
    ("wl-dv", "ok resourceClaimTemplateName reference", mk_valid_workload(add_claims(claim("claim", tpl="resource-claim-template"))), ()),
    ("wl-dv", "ok multiple claims", mk_valid_workload(add_claims(claim("claim-1", ref="rc-1"), claim("claim-2", ref="rc-2"))), ()),
    ("wl-dv", "claim name with prefix", mk_valid_workload(add_claims(claim("../my-claim", ref="rc"))), (f"{P0}.resourceClaims[0].name",)),
    ("wl-dv", "claim name with path", mk_valid_workload(add_claims(claim("my/claim", ref="rc"))), (f"{P0}.resourceClaims[0].name",)),
    ("wl-dv", "duplicate claim entries", mk_valid_workload(add_claims(claim("my-claim", ref="rc-1"), claim("my-claim", ref="rc-2"))), (f"{P0}.resourceClaims[1]",)),
    ("wl-dv", "resource claim source empty", mk_valid_workload(add_claims(claim("my-claim"))), (f"{P0}.resourceClaims[0]",)),
    ("wl-dv", "resource claim reference and template", mk_valid_workload(add_claims(claim("my-claim", ref="rc", tpl="rct"))), (f"{P0}.resourceClaims[0]",)),
    ("wl-dv", "invalid claim reference name", mk_valid_workload(add_claims(claim("my-claim", ref=".foo_bar"))), (f"{P0}.resourceClaims[0].resourceClaimName",)),
    ("wl-dv", "invalid claim template name", mk_valid_workload(add_claims(claim("my-claim", tpl=".foo_bar"))), (f"{P0}.resourceClaims[0].resourceClaimTemplateName",)),
    ("wl-dv", "too many claims", mk_valid_workload(add_claims(*(claim(f"my-claim-{i}", ref="rc") for i in range(5)))), (f"{P0}.resourceClaims",)),
    ("wl-dv", "empty claim name", mk_valid_workload(add_claims(claim("", ref="rc"))), (f"{P0}.resourceClaims[0].name",)),
    ("wl-dv", "empty compositePodGroupTemplates", mk_valid_workload(clear_pgs, set_spec(compositePodGroupTemplates=[])), ("spec",)),
    ("wl-dv", "both podGroupTemplates and compositePodGroupTemplates", mk_valid_workload(set_spec(compositePodGroupTemplates=[{"name": "cpg", "schedulingPolicy": {"basic": {}}, "podGroupTemplates": [{"name": "leaf", "schedulingPolicy": {"basic": {}}}]}])), ("spec",)),
    ("wl-dv", "too many compositePodGroupTemplates", mk_valid_workload(add_cpg(*(f"cpg-{i}" for i in range(8)))), ("spec.compositePodGroupTemplates",)),
    ("wl-dv", "duplicate compositePodGroupTemplates", mk_valid_workload(add_cpg("main")), ("spec.compositePodGroupTemplates[1]",)),
    ("wl-dv", "invalid compositePodGroupTemplate name", mk_valid_workload(set_cpg(0, name="Invalid_Name")), (f"{C0}.name",)),
    ("wl-dv", "empty compositePodGroupTemplate name", mk_valid_workload(set_cpg(0, name="")), (f"{C0}.name",)),
    # the nested templates are gang CompositePodGroup templates with basic PodGroup leaves: accepted
    ("wl-dv", "too many nested compositePodGroupTemplates", mk_valid_workload(many_nested_cpgs(0, 9)), (f"{C0}.compositePodGroupTemplates",)),
    ("wl-dv", "duplicate nested compositePodGroupTemplates", mk_valid_workload(add_nested_cpg(0, "sub", "sub")), (f"{C0}.compositePodGroupTemplates[1]",)),
    ("wl-dv", "cpg empty children", mk_valid_workload(set_cpg(0, podGroupTemplates=[])), (C0,)),
    ("wl-dv", "cpg empty priorityClassName", mk_valid_workload(set_cpg(0, priorityClassName="my-priority")), ("spec",)),
    ("wl-dv", "cpg invalid priorityClassName", mk_valid_workload(set_cpg(0, priorityClassName="Invalid_Class"), set_nested_pg(0, 0, priorityClassName="Invalid_Class")), (f"{C0}.priorityClassName", f"{N0}.priorityClassName")),
    ("wl-dv", "cpg policy missing gang", mk_valid_workload(set_cpg(0, schedulingPolicy={})), (f"{C0}.schedulingPolicy",)),
    ("wl-dv", "cpg policy missing gang minGroupCount", mk_valid_workload(set_cpg(0, schedulingPolicy={"gang": {"minGroupCount": 0}})), (f"{C0}.schedulingPolicy.gang.minGroupCount",)),
    ("wl-dv", "cpg policy invalid gang minGroupCount", mk_valid_workload(set_cpg(0, schedulingPolicy={"gang": {"minGroupCount": -1}})), (f"{C0}.schedulingPolicy.gang.minGroupCount",)),
    ("wl-dv", "too many nested podGroupTemplates", mk_valid_workload(many_nested_pgs(0, 9)), (f"{C0}.podGroupTemplates",)),
    ("wl-dv", "duplicate nested podGroupTemplates", mk_valid_workload(add_nested_pg(0, "sub-pg", "sub-pg")), (f"{C0}.podGroupTemplates[2]",)),
    ("wl-dv", "nested pg empty name", mk_valid_workload(set_nested_pg(0, 0, name="")), (f"{N0}.name",)),
    ("wl-dv", "nested pg invalid name", mk_valid_workload(set_nested_pg(0, 0, name="Invalid_Name")), (f"{N0}.name",)),
    ("wl-dv", "nested pg invalid disruptionMode union", mk_valid_workload(set_nested_pg(0, 0, disruptionMode={"single": {}, "all": {}})), (f"{N0}.disruptionMode",)),
    ("wl-dv", "nested pg invalid priority max", mk_valid_workload(set_cpg(0, priority=1_000_000_001), set_nested_pg(0, 0, priority=1_000_000_001)), (f"{C0}.priority", f"{N0}.priority")),
    ("wl-dv", "nested pg too many resourceClaims", mk_valid_workload(set_nested_pg(0, 0, resourceClaims=[claim(f"claim-{i}", ref="valid-ref") for i in range(5)])), (f"{N0}.resourceClaims",)),
    ("wl-dv", "nested pg duplicate resourceClaims", mk_valid_workload(set_nested_pg(0, 0, resourceClaims=[claim("claim1", ref="valid-ref"), claim("claim1", ref="valid-ref")])), (f"{N0}.resourceClaims[1]",)),
    ("wl-dv", "nested pg resourceClaim invalid union", mk_valid_workload(set_nested_pg(0, 0, resourceClaims=[claim("claim1", ref="valid-ref", tpl="valid-ref")])), (f"{N0}.resourceClaims[0]",)),
    ("wl-dv", "nested pg resourceClaim missing name", mk_valid_workload(set_nested_pg(0, 0, resourceClaims=[{"resourceClaimName": "valid-ref"}])), (f"{N0}.resourceClaims[0].name",)),
    ("wl-dv", "nested pg resourceClaim invalid name", mk_valid_workload(set_nested_pg(0, 0, resourceClaims=[claim("Invalid_Name", ref="valid-ref")])), (f"{N0}.resourceClaims[0].name",)),
    ("wl-dv", "nested pg resourceClaim invalid resourceClaimName", mk_valid_workload(set_nested_pg(0, 0, resourceClaims=[claim("valid-name", ref="Invalid_Ref")])), (f"{N0}.resourceClaims[0].resourceClaimName",)),
    ("wl-dv", "nested pg resourceClaim invalid resourceClaimTemplateName", mk_valid_workload(set_nested_pg(0, 0, resourceClaims=[claim("valid-name", tpl="Invalid_Tpl")])), (f"{N0}.resourceClaims[0].resourceClaimTemplateName",)),
    ("wl-dv", "nested pg schedulingConstraints too many topology", mk_valid_workload(set_nested_pg(0, 0, schedulingConstraints={"topology": [{"key": "key-0"}, {"key": "key-1"}]})), (f"{N0}.schedulingConstraints.topology",)),
    ("wl-dv", "nested pg schedulingConstraints topology missing key", mk_valid_workload(set_nested_pg(0, 0, schedulingConstraints={"topology": [{"key": ""}]})), (f"{N0}.schedulingConstraints.topology[0].key",)),
    ("wl-dv", "nested pg schedulingConstraints topology invalid key", mk_valid_workload(set_nested_pg(0, 0, schedulingConstraints={"topology": [{"key": "invalid/key/slash/format"}]})), (f"{N0}.schedulingConstraints.topology[0].key",)),
    ("wl-dv", "nested pg policy invalid union", mk_valid_workload(set_nested_pg(0, 0, schedulingPolicy={"basic": {}, **_gang(1)})), (f"{N0}.schedulingPolicy",)),
    ("wl-dv", "nested pg policy missing gang minCount", mk_valid_workload(set_nested_pg(0, 0, schedulingPolicy=_gang(0))), (f"{N0}.schedulingPolicy.gang.minCount",)),
    ("wl-dv", "nested pg policy invalid gang minCount", mk_valid_workload(set_nested_pg(0, 0, schedulingPolicy=_gang(-1))), (f"{N0}.schedulingPolicy.gang.minCount",)),
    ("wl-dv", "mismatched PriorityClassName in root podGroupTemplates", mk_valid_workload(set_pg(0, priorityClassName="high-priority"), add_pg("second-pg"), set_pg(1, priorityClassName="low-priority")), ("spec",)),
    ("wl-dv", "mismatched Priority in root podGroupTemplates", mk_valid_workload(set_pg(0, priority=100), add_pg("second-pg"), set_pg(1, priority=200)), ("spec",)),
    ("wl-dv", "mismatched PriorityClassName in cpg hierarchy", mk_valid_workload(clear_pgs, add_cpg("cpg-root"), set_cpg(0, priorityClassName="high-priority"), add_nested_pg(0, "child-pg-1", "child-pg-2"), set_nested_pg(0, 0, priorityClassName="low-priority")), ("spec",)),
    ("wl-dv", "mismatched Priority in cpg hierarchy", mk_valid_workload(clear_pgs, add_cpg("cpg-root"), set_cpg(0, priority=100), add_nested_pg(0, "child-pg-1", "child-pg-2"), set_nested_pg(0, 0, priority=200)), ("spec",)),
    ("wl-dv", "valid nested pg PreemptionPolicy", mk_valid_workload(set_nested_pg(0, 0, preemptionPolicy="PreemptLowerPriority")), ()),
    ("wl-dv", "invalid nested pg PreemptionPolicy", mk_valid_workload(set_nested_pg(0, 0, preemptionPolicy="Invalid")), (f"{N0}.preemptionPolicy",)),
    ("wl", "basic and gang policies", mk_workload(), ()),
    ("wl", "no controllerRef", mk_workload(lambda r: r["spec"].pop("controllerRef")), ()),
    ("wl", "no scheduling constraints", mk_workload(lambda r: pgts(r)[1].pop("schedulingConstraints")), ()),
    ("wl", "composite pod group template has no children", mk_workload(set_spec(compositePodGroupTemplates=[{"name": "main", "schedulingPolicy": {"gang": {"minGroupCount": 1}}}])), (C0,)),
    ("wl", "composite pod group template nested child has no children", mk_workload(set_spec(compositePodGroupTemplates=[{"name": "main", "schedulingPolicy": {"gang": {"minGroupCount": 1}}, "compositePodGroupTemplates": [{"name": "sub", "schedulingPolicy": {"gang": {"minGroupCount": 1}}}]}])), (f"{C0}.compositePodGroupTemplates[0]",)),
    ("wl", "no name", mk_workload(set_meta(name="")), ("metadata.name",)),
    ("wl", "invalid name", mk_workload(set_meta(name=".workload")), ("metadata.name",)),
    ("wl", "too long name", mk_workload(set_meta(name=SUBDOMAIN_MSG_NAME)), ("metadata.name",)),
    ("wl", "duplicate names deep in tree", mk_workload(set_spec(podGroupTemplates=[], compositePodGroupTemplates=[{"name": "main", "schedulingPolicy": {"basic": {}}, "compositePodGroupTemplates": [{"name": "main", "schedulingPolicy": {"basic": {}}, "podGroupTemplates": [{"name": "leaf", "schedulingPolicy": {"basic": {}}}]}]}])), (f"{C0}.compositePodGroupTemplates[0].name",)),
    ("wl", "duplicate names in tree", mk_workload(set_spec(podGroupTemplates=[], compositePodGroupTemplates=[{"name": "cpg1", "schedulingPolicy": {"basic": {}}, "compositePodGroupTemplates": [{"name": "cpg2", "schedulingPolicy": {"basic": {}}, "podGroupTemplates": [{"name": "group1", "schedulingPolicy": {"basic": {}}}]}], "podGroupTemplates": [{"name": "group1", "schedulingPolicy": {"basic": {}}}]}])), (f"{C0}.compositePodGroupTemplates[0].podGroupTemplates[0].name",)),
    ("wl", "exceeds max tree height", mk_workload(tree(4)), (C0,)),
    ("wl", "depth 3 is within the limit (walk of validateWorkloadTemplatesDepth)", mk_workload(tree(3)), ()),
    ("wl", "invalid namespace", mk_workload(set_meta(namespace=".ns")), ("metadata.namespace",)),
    ("wl", "too long namespace", mk_workload(set_meta(namespace="n" * 64)), ("metadata.namespace",)),
    ("cpg-dv", "valid", mk_cpg(), ()),
    ("cpg-dv", "parentCompositePodGroupName invalid", mk_cpg(set_spec(parentCompositePodGroupName="invalid/name")), ("spec.parentCompositePodGroupName",)),
    ("cpg-dv", "priority too high", mk_cpg(set_spec(priority=1_000_000_001)), ("spec.priority",)),
    ("cpg-dv", "priorityClassName invalid", mk_cpg(set_spec(priorityClassName="invalid/name")), ("spec.priorityClassName",)),
    ("cpg-dv", "schedulingPolicy invalid union", mk_cpg(set_spec(schedulingPolicy={})), ("spec.schedulingPolicy",)),
    ("cpg-dv", "schedulingPolicy gang minGroupCount zero", mk_cpg(set_spec(schedulingPolicy={"gang": {"minGroupCount": 0}})), ("spec.schedulingPolicy.gang.minGroupCount",)),
    ("cpg-dv", "schedulingPolicy gang minGroupCount negative", mk_cpg(set_spec(schedulingPolicy={"gang": {"minGroupCount": -1}})), ("spec.schedulingPolicy.gang.minGroupCount",)),
    ("cpg-dv", "no workloadRef", mk_cpg(lambda r: r["spec"].pop("workloadRef")), ("spec.workloadRef",)),
    ("cpg-dv", "workloadRef empty templateName", mk_cpg(set_spec(workloadRef={"workloadName": "workload", "templateName": ""})), ("spec.workloadRef.templateName",)),
    ("cpg-dv", "workloadRef empty workloadName", mk_cpg(set_spec(workloadRef={"workloadName": "", "templateName": "template"})), ("spec.workloadRef.workloadName",)),
    ("cpg-dv", "workloadRef invalid templateName", mk_cpg(set_spec(workloadRef={"workloadName": "workload", "templateName": "invalid/template"})), ("spec.workloadRef.templateName",)),
    ("cpg-dv", "workloadRef invalid workloadName", mk_cpg(set_spec(workloadRef={"workloadName": "invalid/workload", "templateName": "template"})), ("spec.workloadRef.workloadName",)),
    ("cpg", "gang policy", mk_cpg(set_spec(schedulingPolicy={"gang": {"minGroupCount": 1}})), ()),
    ("cpg", "no name", mk_cpg(set_meta(name="")), ("metadata.name",)),
    ("cpg", "invalid name", mk_cpg(set_meta(name=".cpg")), ("metadata.name",)),
    ("cpg", "too long name", mk_cpg(set_meta(name=SUBDOMAIN_MSG_NAME)), ("metadata.name",)),
    ("cpg", "invalid namespace", mk_cpg(set_meta(namespace=".ns")), ("metadata.namespace",)),
    ("cpg", "too long namespace", mk_cpg(set_meta(namespace="n" * 64)), ("metadata.namespace",)),
    ("pg", "gang policy", mk_pg(), ()),
    ("pg", "no scheduling constraints", mk_pg(lambda r: r["spec"].pop("schedulingConstraints")), ()),
    ("pg", "no name", mk_pg(set_meta(name="")), ("metadata.name",)),
    ("pg", "invalid name", mk_pg(set_meta(name=".podGroup")), ("metadata.name",)),
    ("pg", "too long name", mk_pg(set_meta(name=SUBDOMAIN_MSG_NAME)), ("metadata.name",)),
    ("pg", "invalid namespace", mk_pg(set_meta(namespace=".ns")), ("metadata.namespace",)),
    ("pg", "too long namespace", mk_pg(set_meta(namespace="n" * 64)), ("metadata.namespace",)),
    ("pg-dv", "valid with basic policy", mk_pg(set_spec(schedulingPolicy={"basic": {}})), ()),
    ("pg-dv", "gang minCount zero", mk_pg(set_spec(schedulingPolicy=_gang(0))), ("spec.schedulingPolicy.gang.minCount",)),
    ("pg-dv", "gang minCount negative", mk_pg(set_spec(schedulingPolicy=_gang(-1))), ("spec.schedulingPolicy.gang.minCount",)),
    ("pg-dv", "policy with neither basic nor gang", mk_pg(set_spec(schedulingPolicy={})), ("spec.schedulingPolicy",)),
    ("pg-dv", "policy with both basic and gang", mk_pg(set_spec(schedulingPolicy={"basic": {}, **_gang(1)})), ("spec.schedulingPolicy",)),
    ("pg-dv", "schedulingConstraints with multiple topology constraints", mk_pg(pg_topology("foo", "bar")), ("spec.schedulingConstraints.topology",)),
    ("pg-dv", "valid with empty schedulingConstraints", mk_pg(set_spec(schedulingConstraints={})), ()),
    ("pg-dv", "topologyConstraint with empty topology key", mk_pg(pg_topology("")), ("spec.schedulingConstraints.topology[0].key",)),
    ("pg-dv", "valid with topology key with DNS prefix", mk_pg(pg_topology("example.com/Foo")), ()),
    ("pg-dv", "valid with topology key with prefix with max length", mk_pg(pg_topology(LONG_PREFIX_OK)), ()),
    ("pg-dv", "with topology key with invalid characters", mk_pg(pg_topology("Example.com/Foo")), ("spec.schedulingConstraints.topology[0].key",)),
    ("pg-dv", "invalid priority class name", mk_pg(set_spec(priorityClassName="high/priority")), ("spec.priorityClassName",)),
    ("pg-dv", "valid negative priority", mk_pg(set_spec(priority=-2147483648)), ()),
    ("pg-dv", "too high priority", mk_pg(set_spec(priority=1_000_000_001)), ("spec.priority",)),
    ("pg-dv", "ok multiple claims", mk_pg(pg_claims(claim("claim-1", ref="rc-1"), claim("claim-2", ref="rc-2"))), ()),
    ("pg-dv", "claim name with path", mk_pg(pg_claims(claim("my/claim", ref="rc"))), ("spec.resourceClaims[0].name",)),
    ("pg-dv", "duplicate claim entries", mk_pg(pg_claims(claim("my-claim", ref="rc-1"), claim("my-claim", ref="rc-2"))), ("spec.resourceClaims[1]",)),
    ("pg-dv", "resource claim source empty", mk_pg(pg_claims(claim("my-claim"))), ("spec.resourceClaims[0]",)),
    ("pg-dv", "invalid claim template name", mk_pg(pg_claims(claim("my-claim", tpl=".foo_bar"))), ("spec.resourceClaims[0].resourceClaimTemplateName",)),
    ("pg-dv", "too many claims", mk_pg(pg_claims(*(claim(f"my-claim-{i}", ref="rc") for i in range(5)))), ("spec.resourceClaims",)),
    ("job", "ExampleOutOfTreeControllerValidation: basic with disruptionMode all", mk_job({"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}), ("spec.scheduling.disruptionMode",)),
    ("job", "an absent policy resolves to Basic (the Job controller's default)", mk_job({"disruptionMode": {"all": {}}}), ("spec.scheduling.disruptionMode",)),
    ("job", "ExampleJobControllerE2E: gang without minCount, topology", mk_job({"schedulingPolicy": {"gang": {}}, "schedulingConstraints": {"topology": [{"key": "kubernetes.io/hostname"}]}}), ()),
]

W = mk_valid_workload
RV = set_meta(resourceVersion="1")
# (source, upstream case name, stored object, update, upstream's refusal paths)
UPDATES: list[tuple[str, str, Raw, Raw, tuple[str, ...]]] = [
    ("wl-dv-update", "valid update", W(), W(), ()),
    ("wl-dv-update", "valid update with unchanged controllerRef", W(set_controller_ref("apps", "Deployment", "d")), W(set_controller_ref("apps", "Deployment", "d")), ()),
    ("wl-dv-update", "valid update with minCount changed", W(set_controller_ref("apps", "Deployment", "d")), W(set_controller_ref("apps", "Deployment", "d"), set_pg(0, schedulingPolicy=_gang(10))), ()),
    ("wl-dv-update", "set controllerRef", W(), W(set_controller_ref("apps", "Deployment", "d")), ("spec.controllerRef",)),
    ("wl-dv-update", "invalid update controllerRef", W(set_controller_ref("apps", "Deployment", "d")), W(set_controller_ref("apps", "Deployment", "e")), ("spec.controllerRef",)),
    ("wl-dv-update", "unset controllerRef", W(set_controller_ref("apps", "Deployment", "d")), W(), ("spec.controllerRef",)),
    ("wl-dv-update", "invalid update empty podGroupTemplates", W(), W(clear_pgs), (f"{UPDATE}spec.podGroupTemplates", "spec")),
    ("wl-dv-update", "change podGroupTemplate name", W(add_pg("worker1")), W(add_pg("worker2")), ("spec.podGroupTemplates[1]", "spec.podGroupTemplates")),
    ("wl-dv-update", "invalid update too many podGroupTemplates", W(), W(many_pgs(9)), ("spec.podGroupTemplates", *(f"{UPDATE}spec.podGroupTemplates[{i}]" for i in range(9)))),
    ("wl-dv-update", "add podGroupTemplate", W(), W(add_pg("worker1")), ("spec.podGroupTemplates[1]",)),
    ("wl-dv-update", "remove podGroupTemplate", W(add_pg("worker1")), W(), ("spec.podGroupTemplates",)),
    ("wl-dv-update", "invalid update with neither basic nor gang", W(), W(set_pg(0, schedulingPolicy={})), (f"{P0}.schedulingPolicy", f"{UPDATE}{P0}.schedulingPolicy.gang")),
    ("wl-dv-update", "invalid update with both basic and gang", W(), W(set_pg(0, schedulingPolicy={"basic": {}, **_gang(1)})), (f"{P0}.schedulingPolicy", f"{UPDATE}{P0}.schedulingPolicy.basic")),
    ("wl-dv-update", "invalid update of gang minCount", W(), W(set_pg(0, schedulingPolicy=_gang(-1))), (f"{P0}.schedulingPolicy.gang.minCount",)),
    ("wl-dv-update", "invalid update from gang to basic policy", W(), W(set_pg(0, schedulingPolicy={"basic": {}})), (f"{P0}.schedulingPolicy.basic", f"{P0}.schedulingPolicy.gang")),
    ("wl-dv-update", "valid update with unchanged scheduling constraints", W(add_topology(0, "foo")), W(add_topology(0, "foo")), ()),
    ("wl-dv-update", "invalid update to scheduling constraints", W(add_topology(0, "foo")), W(set_pg(0, schedulingConstraints={})), (f"{P0}.schedulingConstraints",)),
    ("wl-dv-update", "invalid update to topology constraints", W(add_topology(0, "foo")), W(add_topology(0, "foo"), add_topology(0, "bar")), (f"{UPDATE}{P0}.schedulingConstraints",)),
    ("wl-dv-update", "invalid update to topology key", W(add_topology(0, "foo")), W(add_topology(0, "bar")), (f"{P0}.schedulingConstraints",)),
    ("wl-dv-update", "invalid add of resource claims", W(), W(add_claims(claim("my-claim", tpl="my-template"))), (f"{P0}.resourceClaims",)),
    ("wl-dv-update", "invalid update of resource claims", W(add_claims(claim("my-claim", tpl="my-template"))), W(add_claims(claim("my-other-claim", tpl="my-template"))), (f"{P0}.resourceClaims",)),
    ("wl-dv-update", "invalid remove of resource claims", W(add_claims(claim("my-claim", tpl="my-template"))), W(), (f"{P0}.resourceClaims",)),
    ("wl-dv-update", "invalid update of disruption mode", W(set_pg(0, disruptionMode={"single": {}})), W(set_pg(0, disruptionMode={"all": {}})), (f"{P0}.disruptionMode",)),
    ("wl-dv-update", "invalid update of priority class name", W(set_pg(0, priorityClassName="low-priority")), W(set_pg(0, priorityClassName="high-priority")), (f"{P0}.priorityClassName",)),
    ("wl-dv-update", "invalid update of priority", W(set_pg(0, priority=1000)), W(set_pg(0, priority=2000)), (f"{P0}.priority",)),
    ("wl-dv-update", "valid update with unchanged PreemptionPolicy", W(set_pg(0, preemptionPolicy="PreemptLowerPriority")), W(set_pg(0, preemptionPolicy="PreemptLowerPriority")), ()),
    ("wl-dv-update", "invalid update of PreemptionPolicy", W(set_pg(0, preemptionPolicy="PreemptLowerPriority")), W(set_pg(0, preemptionPolicy="Never")), (f"{P0}.preemptionPolicy",)),
    ("wl-dv-update", "invalid update add compositePodGroupTemplates", W(), W(add_cpg()), (C0, "spec.podGroupTemplates")),
    ("wl-dv-update", "invalid update add nested compositePodGroupTemplates", W(add_cpg()), W(add_cpg(), add_nested_cpg(0, "sub")), (f"{C0}.compositePodGroupTemplates[0]",)),
    ("wl-dv-update", "invalid update remove compositePodGroupTemplates", W(add_cpg()), W(), ("spec.compositePodGroupTemplates", "spec.podGroupTemplates[0]")),
    ("wl-dv-update", "invalid update remove nested compositePodGroupTemplates", W(add_cpg(), add_nested_cpg(0, "sub")), W(add_cpg()), (f"{C0}.compositePodGroupTemplates",)),
    ("wl-dv-update", "invalid update remove nested podGroupTemplates", W(add_cpg(), add_nested_pg(0, "sub-pg")), W(add_cpg()), (f"{C0}.podGroupTemplates",)),
    ("wl-dv-update", "invalid update immutable compositePodGroupTemplates", W(add_cpg()), W(add_cpg("another")), ("spec.compositePodGroupTemplates[1]",)),
    ("wl-dv-update", "invalid update immutable nested compositePodGroupTemplates", W(add_cpg()), W(add_nested_cpg(0, "sub")), (f"{C0}.compositePodGroupTemplates[0]",)),
    ("wl-dv-update", "invalid update immutable cpg priorityClassName", W(set_cpg(0, priorityClassName="p1"), set_nested_pg(0, 0, priorityClassName="p1")), W(set_cpg(0, priorityClassName="p2"), set_nested_pg(0, 0, priorityClassName="p2")), (f"{C0}.priorityClassName", f"{N0}.priorityClassName")),
    ("wl-dv-update", "invalid update immutable cpg priority", W(set_cpg(0, priority=1), set_nested_pg(0, 0, priority=1)), W(set_cpg(0, priority=2), set_nested_pg(0, 0, priority=2)), (f"{C0}.priority", f"{N0}.priority")),
    ("wl-dv-update", "invalid update immutable nested podGroupTemplates", W(add_cpg()), W(add_nested_pg(0, "another-pg")), (f"{C0}.podGroupTemplates[1]",)),
    ("wl-dv-update", "invalid update immutable nested pg disruptionMode", W(add_cpg(), set_nested_pg(0, 0, disruptionMode={"single": {}})), W(add_cpg(), set_nested_pg(0, 0, disruptionMode={"all": {}})), (f"{N0}.disruptionMode",)),
    ("wl-dv-update", "invalid update immutable nested pg resourceClaims", W(add_cpg(), set_nested_pg(0, 0, resourceClaims=[claim("claim1", ref="valid-ref")])), W(add_cpg(), set_nested_pg(0, 0, resourceClaims=[claim("claim2", ref="valid-ref")])), (f"{N0}.resourceClaims",)),
    ("wl-dv-update", "invalid update immutable nested pg schedulingConstraints", W(add_cpg(), set_nested_pg(0, 0, schedulingConstraints={})), W(add_cpg(), set_nested_pg(0, 0, schedulingConstraints={"topology": [{"key": "key-0"}]})), (f"{N0}.schedulingConstraints",)),
    ("wl-dv-update", "invalid update immutable cpg basic policy", W(set_cpg(0, schedulingPolicy={"basic": {}})), W(set_cpg(0, schedulingPolicy={})), (f"{UPDATE}{C0}.schedulingPolicy.basic", f"{C0}.schedulingPolicy")),
    ("wl-dv-update", "invalid update immutable cpg gang policy", W(set_cpg(0, schedulingPolicy={"gang": {"minGroupCount": 2}})), W(set_cpg(0, schedulingPolicy={})), (f"{UPDATE}{C0}.schedulingPolicy.gang", f"{C0}.schedulingPolicy")),
    ("wl-dv-update", "invalid update nested pg from gang to basic policy", W(add_cpg()), W(add_cpg(), set_nested_pg(0, 0, schedulingPolicy={"basic": {}})), (f"{N0}.schedulingPolicy.basic", f"{N0}.schedulingPolicy.gang")),
    ("wl-dv-update", "invalid update nested pg with neither basic nor gang", W(add_cpg()), W(add_cpg(), set_nested_pg(0, 0, schedulingPolicy={})), (f"{N0}.schedulingPolicy", f"{UPDATE}{N0}.schedulingPolicy.gang")),
    ("wl-dv-update", "invalid update of nested pg PreemptionPolicy", W(set_nested_pg(0, 0, preemptionPolicy="PreemptLowerPriority")), W(set_nested_pg(0, 0, preemptionPolicy="Never")), (f"{N0}.preemptionPolicy",)),
    ("cpg-dv", "valid update", mk_cpg(), mk_cpg(), ()),
    ("cpg-dv", "invalid parentCompositePodGroupName update", mk_cpg(set_spec(parentCompositePodGroupName="parent1")), mk_cpg(set_spec(parentCompositePodGroupName="parent2")), ("spec.parentCompositePodGroupName",)),
    ("cpg-dv", "invalid priority update", mk_cpg(set_spec(priority=100)), mk_cpg(set_spec(priority=200)), ("spec.priority",)),
    ("cpg-dv", "invalid priorityClassName update", mk_cpg(set_spec(priorityClassName="low-priority")), mk_cpg(set_spec(priorityClassName="high-priority")), ("spec.priorityClassName",)),
    ("cpg-dv", "invalid schedulingPolicy update", mk_cpg(), mk_cpg(set_spec(schedulingPolicy={"gang": {"minGroupCount": 5}})), ("spec.schedulingPolicy",)),
    ("cpg-dv", "invalid workloadRef update", mk_cpg(), mk_cpg(lambda r: r["spec"].pop("workloadRef")), ("spec.workloadRef",)),
    ("cpg-dv", "invalid workloadRef.templateName update", mk_cpg(), mk_cpg(set_spec(workloadRef={"workloadName": "workload", "templateName": "other-template"})), ("spec.workloadRef",)),
    ("cpg-dv", "invalid workloadRef.workloadName update", mk_cpg(), mk_cpg(set_spec(workloadRef={"workloadName": "other-workload", "templateName": "template"})), ("spec.workloadRef",)),
    ("pg-dv", "invalid update with neither basic nor gang", mk_pg(), mk_pg(set_spec(schedulingPolicy={})), ("spec.schedulingPolicy",)),
    ("pg-dv", "invalid update from gang to basic policy", mk_pg(), mk_pg(set_spec(schedulingPolicy={"basic": {}})), ("spec.schedulingPolicy",)),
    ("pg-dv", "valid update with unchanged scheduling constraints", mk_pg(), mk_pg(), ()),
    ("pg-dv", "invalid update to scheduling constraints", mk_pg(), mk_pg(set_spec(schedulingConstraints={})), ("spec.schedulingConstraints",)),
    ("pg-dv", "invalid update to topology key", mk_pg(), mk_pg(pg_topology("bar")), ("spec.schedulingConstraints",)),
    ("pg-dv", "invalid add of resource claims", mk_pg(), mk_pg(pg_claims(claim("my-claim", tpl="my-template"))), ("spec.resourceClaims",)),
    ("pg-dv", "invalid update of priority class name", mk_pg(set_spec(priorityClassName="low-priority")), mk_pg(set_spec(priorityClassName="high-priority")), ("spec.priorityClassName",)),
    ("pg-dv", "invalid update of priority", mk_pg(set_spec(priority=1000)), mk_pg(set_spec(priority=2000)), ("spec.priority",)),
]

# Upstream refusals podledger deliberately accepts (docs/upstream.md): (source, case, stored, update, upstream's paths)
DIFFERENCES: list[tuple[str, str, Raw, Raw, tuple[str, ...]]] = [
    ("pg-dv", "invalid update of gang minCount", mk_pg(), mk_pg(set_spec(schedulingPolicy=_gang(10))), ("spec.schedulingPolicy",)),
    ("cpg-dv", "(schedulingPolicy immutable) gang minGroupCount changed", mk_cpg(set_spec(schedulingPolicy={"gang": {"minGroupCount": 2}})), mk_cpg(set_spec(schedulingPolicy={"gang": {"minGroupCount": 3}})), ("spec.schedulingPolicy",)),
]
# fmt: on


# --------------------------------------------------------------------------- running a case


def refused_create(raw: Raw) -> list[str]:
    """The paths podledger's validation refuses a new object at (model rules, then the
    Workload's template tree); admission plugins (priority classes, references) are left out,
    as upstream's validation tests leave them out."""
    obj, problems = validate_raw(raw["kind"], raw)
    if problems:
        return [path for path, _ in problems]
    if isinstance(obj, Workload):
        return [r.field for r in workload_problems(obj)]
    return []


def refused_update(stored: Raw, raw: Raw) -> tuple[list[str], bool]:
    """The paths an update is refused at, and whether validation (before any comparison with
    the stored object) refused it."""
    old, problems = validate_raw(stored["kind"], stored)
    assert old is not None and not problems, problems
    validation = refused_create(raw)
    if validation:
        return validation, True
    new, _ = validate_raw(raw["kind"], raw)
    assert new is not None
    state = InMemoryState()
    state.put(old.normalized())
    outcome = admit([new], state)
    return [r.field for res in outcome.rejected for r in res.reasons], False


def _check(actual: list[str], expected: tuple[str, ...], validation_refused: bool) -> None:
    if not expected:
        assert actual == [], actual
        return
    assert actual, "upstream refuses this, podledger accepts it"
    for path in expected:
        if path.startswith(UPDATE):
            if validation_refused:
                continue  # podledger compares with the stored object only once the new one is valid
            path = path.removeprefix(UPDATE)
        assert path in actual, (path, actual)


@pytest.mark.parametrize(
    ("source", "case", "raw", "expected"), CREATE, ids=[f"{c[0]}: {c[1]}" for c in CREATE]
)
def test_create_as_upstream(source: str, case: str, raw: Raw, expected: tuple[str, ...]) -> None:
    assert source in SOURCES
    _check(refused_create(raw), expected, validation_refused=True)


@pytest.mark.parametrize(
    ("source", "case", "stored", "raw", "expected"), UPDATES, ids=[f"{c[0]}: {c[1]}" for c in UPDATES]
)
def test_update_as_upstream(source: str, case: str, stored: Raw, raw: Raw, expected: tuple[str, ...]) -> None:
    assert source in SOURCES
    actual, validation_refused = refused_update(copy.deepcopy(stored), copy.deepcopy(raw))
    _check(actual, expected, validation_refused)


@pytest.mark.parametrize(
    ("source", "case", "stored", "raw", "upstream"), DIFFERENCES, ids=[f"{c[0]}: {c[1]}" for c in DIFFERENCES]
)
def test_documented_differences(
    source: str, case: str, stored: Raw, raw: Raw, upstream: tuple[str, ...]
) -> None:
    """Upstream refuses these (at ``upstream``); podledger accepts them, on purpose: a gang's
    minimum follows an elastic Job's ``parallelism`` in place (docs/upstream.md)."""
    assert source in SOURCES and upstream
    actual, _ = refused_update(copy.deepcopy(stored), copy.deepcopy(raw))
    assert actual == []


def test_upstream_message_wording() -> None:
    """The messages of upstream's hand-written Workload rules (validation.go), word for word."""

    def reasons(raw: Raw) -> list[str]:
        obj, problems = validate_raw("Workload", raw)
        assert obj is not None, problems
        return [str(r) for r in workload_problems(obj)]

    assert reasons(mk_workload(tree(4))) == [f"{C0}: maximum template hierarchy depth is 4"]
    assert reasons(mk_valid_workload(set_cpg(0, podGroupTemplates=[]))) == [
        f"{C0}: must have at least one child PodGroupTemplate or CompositePodGroupTemplate"
    ]
    assert reasons(mk_valid_workload(set_pg(0, priority=1), add_pg("b"))) == [
        "spec: detected multiple priority configurations"
    ]
    assert reasons(mk_valid_workload(set_cpg(0, priority=1))) == [
        "spec: all priority and priorityClassName values must be identical, detected multiple values"
    ]
