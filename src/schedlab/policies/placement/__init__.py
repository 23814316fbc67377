"""Placement plugins: where a pod or job goes, and which GPUs it takes there."""

from schedlab.policies.placement.base import (
    Placement,
    PlacementPolicy,
    Placer,
    PodRequest,
    RunContext,
)
from schedlab.policies.placement.bestfit import BestFitPlacement
from schedlab.policies.placement.clustering import GpuClusteringPlacement
from schedlab.policies.placement.dotprod import DotProductPlacement
from schedlab.policies.placement.fgd import FgdPlacement
from schedlab.policies.placement.packing import GpuPackingPlacement
from schedlab.policies.placement.random import RandomPlacement

__all__ = [
    "BestFitPlacement",
    "DotProductPlacement",
    "FgdPlacement",
    "GpuClusteringPlacement",
    "GpuPackingPlacement",
    "Placement",
    "PlacementPolicy",
    "Placer",
    "PodRequest",
    "RandomPlacement",
    "RunContext",
]
