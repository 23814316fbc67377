"""The policy contract, checked for every registered policy in every engine it declares, and
the suite itself shown to catch broken policies."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import policy_params
from schedlab.model.cluster import ClusterState
from schedlab.model.snapshot import Decision, Snapshot, Start
from schedlab.policies.api import ENGINES, SERVE
from schedlab.policies.ordering.tiresias import Tiresias
from schedlab.policies.placement.base import PlacementPolicy, PodRequest
from schedlab.policies.plugins import forget
from schedlab.policies.registry import ordering_classes, placement_classes, sizing_classes
from schedlab.policies.scheduler import SchedulingPolicy
from schedlab.serve.loop import ServeConfig
from schedlab.testing import assert_conforms, check_policy

EVERY_POLICY = {**placement_classes(), **ordering_classes(), **sizing_classes()}
#: Parameters that make a policy use its state on the small workloads (tiresias promotes).
PARAMS = {
    "tiresias": {"starvation": "1", "thresholds": "600"},
    # the contract, not the search: a small genetic search keeps the check to seconds
    "pollux": {"generations": "3", "population": "8"},
}


#: Serve cannot be given a topology yet, so placements that need one run there nowhere.
SERVE_HAS_TOPOLOGY = "topology" in ServeConfig.__dataclass_fields__
NEEDS_TOPOLOGY = [n for n, c in EVERY_POLICY.items() if getattr(c, "requires_topology", False)]


def _engines(name: str) -> tuple[str, ...] | None:
    if name in NEEDS_TOPOLOGY and not SERVE_HAS_TOPOLOGY:
        return tuple(e for e in ENGINES if e in EVERY_POLICY[name].engines and e != SERVE)
    return None


@pytest.mark.parametrize("name", policy_params(list(EVERY_POLICY), networks=True))
def test_every_registered_policy_meets_the_contract(name: str) -> None:
    assert_conforms(EVERY_POLICY[name], seeds=(0,), params=PARAMS.get(name), engines=_engines(name))


@pytest.mark.skipif(not SERVE_HAS_TOPOLOGY, reason="serve takes no --topology yet")
@pytest.mark.parametrize("name", [n for n in NEEDS_TOPOLOGY if SERVE in EVERY_POLICY[n].engines])
def test_placements_that_need_a_topology_meet_the_contract_in_serve(name: str) -> None:
    assert_conforms(EVERY_POLICY[name], seeds=(0,), engines=(SERVE,))


class _Amnesiac(Tiresias):
    """Tiresias that loses its promotions when serve rebuilds it: its state is dishonest."""

    name = "conformance-amnesiac"

    def import_state(self, state) -> None:  # type: ignore[no-untyped-def]
        pass


def test_a_policy_that_cannot_rebuild_its_state_is_caught() -> None:
    findings = check_policy(_Amnesiac, engines=("replay",), seeds=(0,), params=PARAMS["tiresias"])
    assert [f.check for f in findings] == ["state rebuild is honest"]
    # the real tiresias, exporting and importing its promotions, is rebuilt exactly
    assert check_policy(Tiresias, engines=("replay",), seeds=(0,), params=PARAMS["tiresias"]) == []


class _ForgetfulCounter(PlacementPolicy):
    """Claims to be stateless but spreads by a counter it keeps: a fresh reset decides
    differently."""

    name = "conformance-forgetful"
    summary = "a dishonest placement"

    def reset(self, ctx) -> None:  # type: ignore[no-untyped-def]
        self.count = 0

    def score(self, pod: PodRequest, state: ClusterState, feasible: np.ndarray) -> np.ndarray:
        self.count += 1
        scores = np.zeros(len(feasible))
        scores[self.count % len(feasible)] = 1.0
        return scores


class _DoubleBooker(SchedulingPolicy):
    """Starts every pending job on node 0, GPU 0, busy or not."""

    name = "conformance-double-booker"
    summary = "a broken scheduler"
    engines = frozenset({"replay"})

    def decide(self, snap: Snapshot) -> list[Decision]:
        return [Start(j, ((0, (0,)),)) for j in snap.pending().tolist()]


@pytest.fixture(autouse=True)
def _forget_test_plugins():
    yield
    for name in ("conformance-forgetful", "conformance-double-booker", "conformance-amnesiac"):
        forget(name)


def test_a_policy_that_claims_stateless_but_is_not_is_caught() -> None:
    findings = check_policy(_ForgetfulCounter, engines=("pack",), seeds=(0,))
    assert any(f.check == "stateless is honest" for f in findings)


def test_a_policy_that_double_books_gpus_is_caught() -> None:
    findings = check_policy(_DoubleBooker, seeds=(0,))
    assert [f.check for f in findings] == ["valid decisions"]
    with pytest.raises(AssertionError, match="breaks the policy contract"):
        assert_conforms(_DoubleBooker, seeds=(0,))


def test_an_undeclared_engine_is_a_finding() -> None:
    findings = check_policy(_DoubleBooker, engines=("serve",), seeds=(0,))
    assert [f.check for f in findings] == ["declared engines"]


def test_a_class_that_is_not_a_policy_is_a_finding() -> None:
    assert [f.check for f in check_policy(int)] == ["is a policy"]
