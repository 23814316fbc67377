"""Readers for public trace formats into the canonical model, and generators of our own."""

from typing import TYPE_CHECKING

from schedlab.lazy import lazy_exports

if TYPE_CHECKING:
    from schedlab.traces.alibaba import read_node_list, read_pod_list

#: Imported on first use: reading a job trace does not load the pod-list reader.
lazy_exports(
    __name__, dict.fromkeys(("read_node_list", "read_pod_list"), "schedlab.traces.alibaba")
)

__all__ = ["read_node_list", "read_pod_list"]
