"""Whole-job placements that choose with the network in view (one module per policy)."""
