"""S1, S2, S6 and S7 live, on a dev Slurm cluster the harness owns (4 × 8 GPUs, each slurmd in a
network namespace of its own behind the project's fault proxy): a node killed, a node cut off, the
controller restarted, a node's link flapping. The §5.4 oracle over job markers, ``sacct -c``, the
journal and ``sinfo``/``squeue`` as polled during the run. Skipped, with the reason, where the
machine cannot host it (root, Slurm, munge, namespaces, cgroup v2 with ``cgroup.kill``).

The cluster's folder is ``$SCHEDLAB_FI_SLURM_DIR`` (its ports are derived from the path), else a
fresh temporary folder; it is stopped, and its namespaces, groups and sockets removed, at the end.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from schedlab.testing.faultinject import cluster as owned
from schedlab.testing.faultinject.live_nodes import OWNED, PENDING_WITHIN, run_owned


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[owned.OwnedCluster]:
    why = owned.probe()
    if why is not None:
        pytest.skip(f"no owned Slurm cluster here: {why}")
    folder = os.environ.get("SCHEDLAB_FI_SLURM_DIR") or str(tmp_path_factory.mktemp("fi-slurm"))
    try:
        cluster = owned.OwnedCluster(Path(folder)).__enter__()
    except owned.HarnessUnavailable as exc:
        pytest.skip(f"no owned Slurm cluster here: {exc}")
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.mark.slurm
@pytest.mark.slow
@pytest.mark.flaky(reruns=1, reruns_delay=5)  # a live cluster's timing; twice is a failure
@pytest.mark.parametrize("name", OWNED)
def test_owned_scenario(harness: owned.OwnedCluster, name: str, tmp_path: Path) -> None:
    result = run_owned(name, harness, tmp_path, seed=1)
    assert result.violations == [], result.details
    assert len(result.jobs) == 12
    starts = {r["job"] for r in result.journal if r["action"] == "start"}
    assert starts == set(result.jobs)
    details = result.details
    if name in ("S1", "S2"):
        assert details["victims"], "the fault hit no running job"
        for pending, running in details["requeue"].values():
            assert pending is not None and pending <= PENDING_WITHIN
            assert running is not None
        # the lost node was DOWN in Slurm's eyes for a while after the fault
        assert any(a >= details["fault"] for a, _ in details["down"].get(details["victim"], []))
    if name == "S2":  # the replacements ran while the cut-off instances were still running
        assert any(r["action"] == "requeued" for r in result.journal)
        assert details["back"] >= details["heal"]
    if name == "S6":
        assert details["heal"] > details["fault"]


def test_refuses_a_cluster_off_loopback(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("SlurmctldHost=ctl.example.org\nSlurmctldPort=6817\n")
    with pytest.raises(ValueError, match="loopback only"):
        owned.check_loopback(conf)
    conf.write_text("SlurmctldHost=localhost\nNodeName=n1 NodeAddr=10.0.0.5 Port=1\n")
    with pytest.raises(ValueError, match=r"NodeAddr=10\.0\.0\.5"):
        owned.check_loopback(conf)
