"""Plain data for clusters and workloads: numpy arrays that policies score in one shot."""

from schedlab.model.cluster import Cluster, ClusterState
from schedlab.model.gpu_models import GPU_MODELS, model_index, spec_mask
from schedlab.model.pods import PodTable

__all__ = ["GPU_MODELS", "Cluster", "ClusterState", "PodTable", "model_index", "spec_mask"]
