"""schedlab: decide where and when deep-learning work runs on a shared GPU cluster, and measure
how well that went.

The public surface is deliberately small; everything else lives in sub-packages that follow the
data flow: ``traces`` (files → model) → ``engines`` (apply ``policies``) → ``metrics`` →
``report``.
"""

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from schedlab.errors import InputError, SchedlabError
from schedlab.lazy import lazy_exports

if TYPE_CHECKING:
    from schedlab.engines.pack import PackConfig, PackResult, run_pack
    from schedlab.model import Cluster, ClusterState, PodTable
    from schedlab.policies.registry import make_placement, placement_names

#: Public names and the module each comes from. They are imported on first use, so that
#: ``schedlab --help`` does not pay for numpy, pandas and every policy class.
_LAZY = {
    "PackConfig": "schedlab.engines.pack",
    "PackResult": "schedlab.engines.pack",
    "run_pack": "schedlab.engines.pack",
    "Cluster": "schedlab.model",
    "ClusterState": "schedlab.model",
    "PodTable": "schedlab.model",
    "make_placement": "schedlab.policies.registry",
    "placement_names": "schedlab.policies.registry",
}

lazy_exports(__name__, _LAZY)


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
