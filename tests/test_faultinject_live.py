"""S3, S4, S5 and S8 live on the dev Slurm cluster (scripts/slurm-dev-cluster.sh, 4 × 8 GPUs):
faults on the scheduler ↔ controller link through the project's fault proxy, the §5.4 oracle
over job markers, ``sacct -c`` and the journal. Skipped, with the reason, without a cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedlab.serve.client import SubprocessSlurm, slurm_reachable
from schedlab.serve.slurm_state import read_jobs, read_nodes
from schedlab.testing.faultinject.live import LIVE, run_live

#: A live cluster's own timing (a slurmd slow to re-register on a loaded machine) may fail a
#: run of a scenario; a third failure is a failure. (S3 used to fail both tries now and then:
#: its window of unknown state ended a second before the heal, but a cycle that began up to
#: Slurm's MessageTimeout before the heal has its held read answered at the heal and acts,
#: correctly, on fresh state under its begin time. The window now ends that much earlier.)
pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.flaky(reruns=2, reruns_delay=10)]


@pytest.fixture(scope="module")
def cluster() -> None:
    ok, why = slurm_reachable()
    if not ok:
        pytest.skip(
            f"no Slurm cluster reachable ({why}); start one with "
            "'scripts/slurm-dev-cluster.sh start' and export the SLURM_CONF it prints"
        )
    client = SubprocessSlurm()
    nodes = read_nodes(client.sinfo())
    if len(nodes) != 4 or any(n.gpus != 8 for n in nodes):
        pytest.skip(
            f"the Slurm cluster is not 4 nodes × 8 GPUs: {[(n.name, n.gpus) for n in nodes]}"
        )
    busy = [j.job_id for j in read_jobs(client.squeue()) if j.active]
    if busy:
        pytest.skip(f"the Slurm cluster is busy with jobs {busy}")


@pytest.mark.parametrize("name", LIVE)
def test_live_scenario(cluster: None, name: str, tmp_path: Path) -> None:
    result = run_live(name, tmp_path, seed=1)
    assert result.violations == []
    starts = {r["job"] for r in result.journal if r["action"] == "start"}
    assert starts <= set(result.jobs) and len(result.jobs) == 12
    if name == "S5":
        assert result.kills == 10
    if name in ("S3", "S8"):
        assert any(r["action"] == "error" for r in result.journal)
