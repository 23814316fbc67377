"""Measures computed from what an engine recorded (never from engine internals)."""

from schedlab.metrics.fragmentation import TargetWorkload, cluster_fragmentation, node_fragmentation

__all__ = ["TargetWorkload", "cluster_fragmentation", "node_fragmentation"]
