"""Network-aware whole-job placements (one module per policy)."""
