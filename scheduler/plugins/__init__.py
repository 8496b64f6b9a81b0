"""Scheduler plugins, one module per plugin, with upstream names and messages.

Filters are vectorized over all nodes of a ``Snapshot``; ``scheduler.reference`` holds a pure-Python,
node-by-node implementation of the same filters (benchmark baseline, cross-checked in tests).
Default filter order (kube-scheduler's default profile): NodeUnschedulable, TaintToleration,
NodeAffinity, NodeResourcesFit.
"""
