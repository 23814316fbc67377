"""Fuzzing the new surfaces: topology TOML documents, ``NAME:key=value`` topology specs, carbon
series (files, ``const:`` and ``synth:``) and what a plugin's methods return. Whatever goes in,
the reader returns something within bounds or raises InputError, and the engine's check accepts
an answer it can apply or raises PolicyError — never another exception (a traceback), never a
value that would run out of memory, hang or be applied wrong."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlab.energy.carbon import MAX_CI, MIN_STEP, parse_ci, read_ci_csv
from schedlab.energy.shifting import lowest_carbon_start
from schedlab.engines.decision_check import (
    DecisionCheck,
    checked_gpus,
    checked_keys,
    checked_scores,
)
from schedlab.errors import InputError, PolicyError
from schedlab.model.cluster import GPU_MILLI
from schedlab.model.jobs import JobTable
from schedlab.network.generators import GENERATORS, parse_topology
from schedlab.network.topology import Topology
from schedlab.network.topology_limits import (
    MAX_FABRIC_LINKS,
    MAX_GBPS,
    MAX_GPUS_PER_HOST,
    MAX_HOSTS,
    MAX_SWITCHES,
    MIN_GBPS,
    unreachable_leaves,
)
from schedlab.network.topology_toml import topology_from_toml
from schedlab.policies.placement.bestfit import BestFitPlacement
from schedlab.traces.cluster_spec import parse_compact

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

#: Values of any TOML type a careless file holds: small and absurd numbers, text, booleans.
AWKWARD: list[Any] = [
    0, 1, 2, 3, 4, -1, 1.5, 2.0, 100, 1e8, 2**40, 10**400, math.nan, math.inf, -math.inf,
    1e-300, 1e300, "", "L0", "S0", "4", "nan", True, False, [], {}, [1, 2],
]  # fmt: skip
value = st.sampled_from(AWKWARD)


def check_topology(topo: Topology) -> None:
    """What a topology a reader returned must be: within every bound, connected."""
    assert 1 <= topo.num_hosts <= MAX_HOSTS
    assert topo.num_switches <= MAX_SWITCHES
    assert len(topo.fabric_src) <= MAX_FABRIC_LINKS
    assert np.all((topo.host_gpus >= 1) & (topo.host_gpus <= MAX_GPUS_PER_HOST))
    rates = topo.link_gbps
    assert np.all((rates >= MIN_GBPS) & (rates <= MAX_GBPS)), rates
    if topo.ocs is None:
        assert (
            unreachable_leaves(topo.num_switches, topo.fabric_src, topo.fabric_dst, topo.host_leaf)
            is None
        )


# -- topology TOML documents ---------------------------------------------------------------------
def table(keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """A TOML table of mostly the right keys (and now and then a stray one), awkward values."""
    known = st.dictionaries(st.sampled_from(keys), value, max_size=len(keys))
    stray = st.dictionaries(st.sampled_from(["bogus", "nic_gpbs", "latency_us"]), value)
    return st.tuples(known, stray, st.booleans()).map(lambda t: {**t[0], **(t[1] if t[2] else {})})


NAMES = st.sampled_from(["L0", "L1", "S0", "C0"])
TIERS = st.sampled_from(["leaf", "spine", "core", "x"])
switches = st.lists(st.tuples(NAMES, TIERS, table(["ina_gbps"])), max_size=4).map(
    lambda rows: [{"name": n, "tier": t, **rest} for n, t, rest in rows]
)
hosts = st.lists(table(["leaf", "count", "gpus", "nics", "nic_gbps"]), max_size=3)
links = st.lists(table(["a", "b", "gbps", "count"]), max_size=3)
documents = st.fixed_dictionaries(
    {},
    optional={
        "switches": switches,
        "hosts": hosts,
        "links": links,
        "intra_gbps": value,
        "model": st.sampled_from(["V100", "Z99", 3]),
        "bogus": value,
    },
)


@FUZZ
@given(documents)
def test_topology_documents(doc: dict[str, Any]) -> None:
    try:
        topo = topology_from_toml(doc, "fuzz.toml", "fuzz")
    except InputError:
        return
    check_topology(topo)


WELL_FORMED = {
    "switches": [
        {"name": "L0", "tier": "leaf"},
        {"name": "L1", "tier": "leaf"},
        {"name": "S0", "tier": "spine"},
    ],
    "hosts": [
        {"leaf": "L0", "gpus": 4, "nic_gbps": 100},
        {"leaf": "L1", "gpus": 4, "nic_gbps": 100},
    ],
    "links": [{"a": "L0", "b": "S0", "gbps": 100}, {"a": "L1", "b": "S0", "gbps": 100}],
}


@FUZZ
@given(
    st.sampled_from(["hosts", "links", "switches"]),
    st.integers(0, 1),
    st.sampled_from(["count", "gpus", "nics", "nic_gbps", "gbps", "ina_gbps", "leaf", "a", "b"]),
    value,
)
def test_one_awkward_value_in_a_good_file(part: str, entry: int, key: str, bad: Any) -> None:
    doc = {k: [dict(e) for e in v] for k, v in WELL_FORMED.items()}
    doc[part][min(entry, len(doc[part]) - 1)][key] = bad
    try:
        topo = topology_from_toml(doc, "fuzz.toml", "fuzz")
    except InputError:
        return
    check_topology(topo)


# -- NAME:key=value specs -------------------------------------------------------------------------
SPEC_KEYS = sorted({p for g in GENERATORS.values() for p in g.parameters()} | {"bogus", ""})
SPEC_VALUES = ["0", "1", "2", "4", "-3", "2.5", "1e6", "1e300", "nan", "inf", "", "V100", "x"]
specs = st.tuples(
    st.sampled_from([*GENERATORS, "torus", "lingjun", ""]),
    st.lists(st.tuples(st.sampled_from(SPEC_KEYS), st.sampled_from(SPEC_VALUES)), max_size=4),
    st.sampled_from([",", ",,", " , "]),
).map(lambda t: t[0] + (":" + t[2].join(f"{k}={v}" for k, v in t[1]) if t[1] else ""))


@FUZZ
@given(specs)
def test_topology_specs(spec: str) -> None:
    try:
        topo = parse_topology(spec)
    except InputError:
        return
    check_topology(topo)


# -- carbon series --------------------------------------------------------------------------------
CELLS = [
    "0",
    "1",
    "60",
    "3600",
    "0.5",
    "1e-6",
    "-5",
    "100",
    "2000",
    "2001",
    "1e300",
    "nan",
    "x",
    "",
]


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(CELLS), st.sampled_from(CELLS)), min_size=1, max_size=6))
def test_carbon_series_files(rows: list[tuple[str, str]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "ci.csv"
        path.write_text("time,ci_g_per_kwh\n" + "".join(f"{t},{v}\n" for t, v in rows))
        try:
            series = read_ci_csv(path)
        except InputError:
            return
    assert np.all((series.values >= 0) & (series.values <= MAX_CI))
    assert np.all(np.diff(series.times) >= MIN_STEP)
    # A day of slack walks at most a day's worth of steps.
    assert len(series.steps_between(0.0, 86_400.0)) <= 86_400 / MIN_STEP + len(series.times)
    lowest_carbon_start(series, 0.0, 3600.0, 3600.0)


SYNTH = ["days", "seed", "start_hour", "mu", "a", "h_peak", "s", "rho", "f", "wind"]


@FUZZ
@given(
    st.sampled_from(["synth:gb2020", "synth:de2020", "synth:xx", "const:", "sinth:gb2020"]),
    st.lists(st.tuples(st.sampled_from(SYNTH), st.sampled_from(SPEC_VALUES)), max_size=3),
)
def test_carbon_specs(head: str, options: list[tuple[str, str]]) -> None:
    if head == "const:":
        spec = head + (options[0][1] if options else "")
    else:
        spec = head + "".join(f",{k}={v}" for k, v in options)
    try:
        series = parse_ci(spec)
    except InputError:
        return
    assert len(series.values) <= 3660 * 24
    assert np.all((series.values >= 0) & (series.values <= MAX_CI))


# -- what a plugin returns ------------------------------------------------------------------------
CLUSTER = parse_compact("3x4:V100")
returned = st.one_of(
    st.none(),
    st.integers(-2, 5),
    st.text(max_size=3),
    st.lists(st.one_of(st.integers(-2, 6), st.floats(allow_nan=True)), max_size=5),
    st.lists(st.integers(-1, 4), max_size=5).map(tuple),
    st.tuples(st.integers(-1, 4), st.integers(-1, 4)),
    st.sampled_from([np.zeros(3), np.full(3, np.nan), np.array([1, np.nan, 2]), np.zeros(2),
                     np.zeros((3, 1)), np.array(["a", "b", "c"]), np.array([0.0, np.inf, -np.inf]),
                     np.arange(3), np.array([True, False, True])]),
)  # fmt: skip


@FUZZ
@given(returned, st.lists(st.booleans(), min_size=3, max_size=3).filter(any))
def test_plugin_scores(answer: object, mask: list[bool]) -> None:
    feasible = np.array(mask)
    try:
        scores = checked_scores(BestFitPlacement(), answer, feasible)
    except PolicyError:
        return
    assert isinstance(scores, np.ndarray) and scores.shape == (3,)


@FUZZ
@given(returned, st.integers(0, 3), st.sampled_from([GPU_MILLI, 500]))
def test_plugin_gpu_picks(answer: object, num_gpu: int, milli: int) -> None:
    state = CLUSTER.new_state()
    state.allocate(1, [0], 0, 0, GPU_MILLI, 1)  # node 1's GPU 0 is taken
    node = 1
    try:
        gpus = checked_gpus(BestFitPlacement(), answer, state, node, num_gpu, milli)
    except PolicyError:
        return
    assert len(gpus) == num_gpu == len(set(gpus))
    state.allocate(node, gpus, 0, 0, milli if num_gpu else 0, num_gpu)  # never over-allocates


@FUZZ
@given(returned, st.integers(1, 3))
def test_plugin_keys(answer: object, count: int) -> None:
    try:
        keys = checked_keys(BestFitPlacement(), answer, count)
    except PolicyError:
        return
    assert keys.shape == (count,) and not np.isnan(keys.astype(np.float64)).any()


entries = st.tuples(st.integers(-1, 3), st.lists(st.integers(-1, 4), max_size=5).map(tuple))
allocations = st.one_of(returned, st.lists(entries, max_size=3).map(tuple))


class _Policy:
    name = "fuzz"
    elastic = False


@FUZZ
@given(allocations, st.integers(0, 1), st.booleans())
def test_plugin_allocations(answer: object, job: int, elastic: bool) -> None:
    jobs = JobTable.from_columns(job_id=["a", "b"], submit_time=[0, 0], num_gpus=[2, 4])
    policy = _Policy()
    policy.elastic = elastic
    check = DecisionCheck(policy, CLUSTER, jobs)
    try:
        check.allocation(job, answer, "started")
    except PolicyError:
        return
    given_gpus = sum(len(g) for _, g in answer)  # type: ignore[union-attr]
    assert given_gpus == jobs.num_gpus[job] or (elastic and 1 <= given_gpus <= 12)
    state = CLUSTER.new_state()
    for node, gpus in answer:  # type: ignore[union-attr]
        state.allocate(node, gpus, 0, 0, GPU_MILLI, len(gpus))  # nodes and GPUs exist
