"""The dev control plane (scripts/k8s-dev-cluster.sh) for the live Kubernetes tests.

``KUBECONFIG`` names the admin kubeconfig the script prints, ``SCHEDLAB_KUBECONFIG`` the
scheduler's (user ``schedlab``, only the ClusterRole's rights). Without them, or when the API
server does not answer, the live tests skip and say why.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from schedlab.errors import SchedlabError
from schedlab.serve.kubernetes.api import KubeAPI
from schedlab.serve.kubernetes.kubeconfig import load_credentials

START = 'eval "$(scripts/k8s-dev-cluster.sh start)"'


def live_cluster() -> tuple[KubeAPI, Path]:
    """The admin client and the scheduler's kubeconfig, or skip with the reason."""
    admin, sched = os.environ.get("KUBECONFIG"), os.environ.get("SCHEDLAB_KUBECONFIG")
    if not admin or not sched:
        pytest.skip(f"no dev Kubernetes cluster: KUBECONFIG/SCHEDLAB_KUBECONFIG unset ({START})")
    try:
        api = KubeAPI(load_credentials(Path(admin)), timeout=5.0)
        api.get("/readyz")
    except (SchedlabError, OSError) as exc:
        pytest.skip(f"the dev Kubernetes API server does not answer ({exc}); {START}")
    return api, Path(sched)


def fresh_namespace(api: KubeAPI, prefix: str) -> str:
    """A new namespace (namespaces never finish deleting without a controller-manager)."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    api.post("/api/v1/namespaces", {"metadata": {"name": name}})
    return name


def create_pod(api: KubeAPI, obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    meta.pop("creationTimestamp", None)
    meta.pop("uid", None)
    api.post(f"/api/v1/namespaces/{meta['namespace']}/pods", obj)


def install_crds(api: KubeAPI, path: Path, seconds: float = 30.0) -> None:
    """Install the CustomResourceDefinitions of a YAML file (those already there are kept) and
    wait until the API server serves them."""
    import time

    import yaml

    from schedlab.serve.kubernetes.api import KubeError

    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    for doc in yaml.safe_load_all(path.read_text()):
        try:
            api.post(crds, doc)
        except KubeError as exc:
            if exc.status != 409:  # AlreadyExists
                raise
        name = doc["metadata"]["name"]
        deadline = time.monotonic() + seconds
        while True:
            conditions = api.get(f"{crds}/{name}").get("status", {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                break
            assert time.monotonic() < deadline, f"CRD {name} was not established"
            time.sleep(0.2)
