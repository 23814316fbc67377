"""Whole-job placements that look at the network under the cluster (``--topology``)."""
