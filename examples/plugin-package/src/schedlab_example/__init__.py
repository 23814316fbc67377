"""Example schedlab plugins: ``spread`` (placement) and ``fewest-gpus`` (ordering)."""
