"""Scheduler plugins, one module per plugin (or per rule family), with upstream names and messages.

Each module holds a plugin's rules, its messages and a small plugin class for its extension
point(s) (``scheduler.framework``); ``scheduler.profile`` lists them in call order:

* PreEnqueue: ``scheduling_gates`` (SchedulingGates), ``gang_scheduling`` (GangScheduling:
  minCount, CompositePodGroup tree quorum; also PlacementFeasible, used by the §5.2 algorithm);
* PreFilter: ``elastic_quota`` (ElasticQuota);
* Filter (node-static, vectorized over all nodes): ``node_unschedulable``, ``node_name``,
  ``taint_toleration``, ``node_affinity``; ``node_resources_fit`` is the built-in dynamic filter
  and node scorer;
* Score: ``taint_toleration``, ``node_affinity`` (plus NodeResourcesFit and
  ``balanced_allocation``, both scored per demand in the pod scheduler's incremental cache,
  ``scheduler.fitcache``);
* pod-aware Filter / Score (read the scheduled pods through ``pod_index``, vectorized over all
  nodes, evaluated per pod only when active for it): ``node_ports`` (before NodeResourcesFit),
  ``pod_topology_spread``, ``inter_pod_affinity``; scores ``inter_pod_affinity``,
  ``pod_topology_spread``; percentageOfNodesToScore is in ``scheduler.podsched``;
* PlacementGenerate: ``topology_placement``; PlacementScore: ``placement_scoring``;
* PostFilter: preemption (``scheduler.preemption``).

``scheduler.reference`` holds a pure-Python, node-by-node implementation of the default filters
and scores (benchmark baseline, cross-checked in tests); explain reaches it through
``Scheduler.node_verdicts``.
"""
