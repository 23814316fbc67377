"""Readers for public trace formats into the canonical model, and generators of our own."""

from schedlab.traces.alibaba import read_node_list, read_pod_list

__all__ = ["read_node_list", "read_pod_list"]
