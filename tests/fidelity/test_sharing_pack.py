"""Pack mode of the sharing engine against ``schedlab pack``: every placement policy, seeds
42..51 on the default pod list, the same placements and curves."""

from __future__ import annotations

import pytest

from conftest import ALIBABA_DIR, SHARED_MISSING_REASON
from schedlab.policies.api import PACK
from schedlab.policies.registry import PLACEMENT_POLICIES, placement_names
from schedlab.traces.alibaba import read_node_list, read_pod_list
from sharing_cases import assert_pack_mode_is_pack

pytestmark = [pytest.mark.slow, pytest.mark.shared]


@pytest.mark.parametrize(
    "policy", [p for p in placement_names() if PACK in PLACEMENT_POLICIES[p].engines]
)
def test_pack_mode_is_pack_for_every_seed(policy):
    if not ALIBABA_DIR.is_dir():
        pytest.skip(SHARED_MISSING_REASON)
    cluster = read_node_list(ALIBABA_DIR / "openb_node_list_gpu_node.csv")
    pods = read_pod_list(ALIBABA_DIR / "openb_pod_list_default.csv")
    for seed in range(42, 52):
        assert_pack_mode_is_pack(cluster, pods, policy, seed)
