"""The pack figures' bands and the pack page's table are computed without pandas; these check
them against what pandas computes for the same cells (the grid's ``aggregate.csv`` and the
figures of earlier releases), so a pack run's page and figures mean what they always meant."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.experiments.pack_sweep import aggregate, result_rows, results_table
from schedlab.report.pack_figures import _band, curve_columns, curves_frame
from schedlab.report.pack_report import ROWS, _policy_stats

values = st.floats(min_value=0.0, max_value=100.0, allow_nan=False, width=64)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.one_of(values, st.just(math.nan))), min_size=1, max_size=40
    )
)
def test_band_is_pandas_median_and_quartiles_bit_for_bit(cells: list[tuple[int, float]]) -> None:
    frame = pd.DataFrame(cells, columns=["bin", "unallocated_gpu_pct"])
    g = frame.groupby("bin")["unallocated_gpu_pct"]
    expected = pd.DataFrame(
        {"median": g.median(), "q25": g.quantile(0.25), "q75": g.quantile(0.75)}
    )
    curves = {
        "bin": frame["bin"].to_numpy(),
        "unallocated_gpu_pct": frame["unallocated_gpu_pct"].to_numpy(),
    }
    bins, median, q25, q75 = _band(curves, "unallocated_gpu_pct")
    np.testing.assert_array_equal(bins, expected.index.to_numpy())
    np.testing.assert_array_equal(median, expected["median"].to_numpy())
    np.testing.assert_array_equal(q25, expected["q25"].to_numpy())
    np.testing.assert_array_equal(q75, expected["q75"].to_numpy())


def test_band_by_hand() -> None:
    # bin 0: 1, 2, 4, 8 → median 3, q25 1.75 (1 + 0.75·1), q75 5 (4 + 0.25·4); bin 1: NaN only.
    curves = {
        "bin": np.array([0, 0, 0, 0, 1]),
        "m": np.array([8.0, 1.0, 4.0, 2.0, math.nan]),
    }
    bins, median, q25, q75 = _band(curves, "m")
    assert bins.tolist() == [0, 1]
    assert median[0] == 3.0 and q25[0] == 1.75 and q75[0] == 5.0
    assert math.isnan(median[1]) and math.isnan(q25[1]) and math.isnan(q75[1])


def _summary(policy: str, seed: int, at100: float, at130: float | None, failed: int) -> dict:
    unalloc = {"0": 100.0, "100": at100, **({"130": at130} if at130 is not None else {})}
    frag = {k: v / 2 for k, v in unalloc.items()}
    return {
        "workload": "pods",
        "policy": policy,
        "seed": seed,
        "inflate": 1.3,
        "unallocated_gpu_pct": unalloc,
        "frag_amount_pct": frag,
        "frag_ratio_pct": frag,
        "pods_total": 100,
        "pods_failed": failed,
        "wall_seconds": 0.5,
    }


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["fgd", "bestfit", "random"]),
            values,
            st.one_of(st.none(), values),
            st.integers(0, 50),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_page_statistics_agree_with_the_grids_aggregate(runs: list) -> None:
    summaries = [_summary(p, seed, a, b, f) for seed, (p, a, b, f) in enumerate(runs)]
    policies = list(dict.fromkeys(s["policy"] for s in summaries))
    table = results_table(summaries, policies)
    agg = aggregate(table).set_index("policy")
    stats = _policy_stats(result_rows(summaries, policies))
    failed = table.groupby("policy")["pods_failed"].mean()
    for policy in policies:
        assert stats[policy]["runs"] == agg.loc[policy, "runs"]
        assert math.isclose(stats[policy]["failed"], failed[policy], rel_tol=1e-12)
        for field, _, _ in ROWS:
            mean, half = stats[policy][field]
            for ours, theirs in (
                (mean, agg.loc[policy, f"{field}_mean"]),
                (half, agg.loc[policy, f"{field}_ci95"]),
            ):
                if theirs is None or (isinstance(theirs, float) and math.isnan(theirs)):
                    assert math.isnan(ours)
                else:
                    assert math.isclose(ours, theirs, rel_tol=1e-12, abs_tol=1e-12)


def test_page_statistics_by_hand() -> None:
    # fgd: 4 and 6 at 100 % → mean 5, sd √2, half-width t(0.975, 1)·√2/√2 = 12.7062; 130 % only
    # once → a mean without an interval. bestfit: one run.
    summaries = [
        _summary("fgd", 1, 4.0, None, 10),
        _summary("fgd", 2, 6.0, 3.0, 20),
        _summary("bestfit", 1, 7.0, 5.0, 30),
    ]
    stats = _policy_stats(result_rows(summaries, ["fgd", "bestfit"]))
    mean, half = stats["fgd"]["unallocated_gpu_pct_100"]
    assert mean == 5.0 and math.isclose(half, 12.7062047, rel_tol=1e-7)
    mean, half = stats["fgd"]["unallocated_gpu_pct_130"]
    assert mean == 3.0 and math.isnan(half)
    assert stats["fgd"]["failed"] == 15.0 and stats["fgd"]["runs"] == 2
    assert stats["bestfit"]["unallocated_gpu_pct_100"][0] == 7.0
    assert math.isnan(stats["bestfit"]["unallocated_gpu_pct_100"][1])


def test_curve_columns_and_the_grid_frame_are_the_same_table() -> None:
    summaries = [_summary("fgd", 1, 4.0, 3.0, 1), _summary("bestfit", 2, 7.0, None, 2)]
    columns = curve_columns(summaries)
    frame = curves_frame(summaries)
    assert list(frame.columns) == list(columns)
    for name, values in columns.items():
        assert frame[name].tolist() == values.tolist()
    assert frame["seed"].dtype == np.int64 and frame["bin"].dtype == np.int64
