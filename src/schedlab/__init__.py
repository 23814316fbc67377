"""schedlab: decide where and when deep-learning work runs on a shared GPU cluster, and measure
how well that went.

The public surface is deliberately small; everything else lives in sub-packages that follow the
data flow: ``traces`` (files → model) → ``engines`` (apply ``policies``) → ``metrics`` →
``report``.
"""

from importlib.metadata import PackageNotFoundError, version

from schedlab.engines.pack import PackConfig, PackResult, run_pack
from schedlab.errors import InputError, SchedlabError
from schedlab.model import Cluster, ClusterState, PodTable
from schedlab.policies.registry import make_placement, placement_names

try:
    __version__ = version("schedlab")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

__all__ = [
    "Cluster",
    "ClusterState",
    "InputError",
    "PackConfig",
    "PackResult",
    "PodTable",
    "SchedlabError",
    "__version__",
    "make_placement",
    "placement_names",
    "run_pack",
]
