"""Compatibility shim: the pure-Python reference moved to ``scheduler.reference`` (not a plugin).

Kept only for code that still imports the old path; new code imports ``scheduler.reference``.
"""

from scheduler.reference import RefNode, filter_node, fit_error, ref_nodes, schedule

__all__ = ["RefNode", "filter_node", "fit_error", "ref_nodes", "schedule"]
