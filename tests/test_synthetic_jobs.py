"""Synthetic job traces: reproducible from a seed, Philly-like statistics by default, each knob
doing what it says (and only that), offered load hit on purpose, and bad specs named field by field.

Nothing here is timed: speed is checked by hand (see the module docstring), not in tests."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from schedlab.traces.synthetic_jobs import (
    ELASTICFLOW_A100_MODELS,
    PHILLY_GPU_MIX,
    SyntheticJobSpec,
    duration_shape,
    generate_jobs,
    load_for_gpus,
    offered_load,
)

N = 200_000


def gen(seed: int = 0, **fields) -> object:
    return generate_jobs(SyntheticJobSpec(**fields), np.random.default_rng(seed))


@pytest.fixture(scope="module")
def philly_like():
    return generate_jobs(SyntheticJobSpec(jobs=N), np.random.default_rng(7))


def test_same_seed_same_trace_other_seed_other_trace():
    spec = SyntheticJobSpec(
        jobs=5_000, arrival="diurnal", deadline_fraction=0.5, models=ELASTICFLOW_A100_MODELS
    )
    a = generate_jobs(spec, np.random.default_rng(42))
    b = generate_jobs(spec, np.random.default_rng(42))
    for name, col in a.columns().items():
        np.testing.assert_array_equal(col, b.columns()[name], err_msg=name)
    c = generate_jobs(spec, np.random.default_rng(43))
    assert not np.array_equal(a.duration, c.duration)


def test_philly_like_defaults(philly_like):
    j = philly_like
    assert len(j) == N
    assert j.job_id[0] == "0" and len(set(j.job_id[:1000])) == 1000
    # Arrivals: Poisson, starting at 0, in order, with the mean gap asked for.
    assert j.submit_time[0] == 0.0
    assert (np.diff(j.submit_time) >= 0).all()
    assert np.diff(j.submit_time).mean() == pytest.approx(114.4, rel=0.02)
    # Run times: Philly's median and mean, inside the clip range.
    assert np.median(j.duration) == pytest.approx(1_144, rel=0.05)
    assert j.duration.mean() == pytest.approx(13_136, rel=0.10)
    assert j.duration.min() >= 1.0 and j.duration.max() <= 4_628_226.0
    # GPU mix: Philly's shares.
    total = sum(w for _, w in PHILLY_GPU_MIX)
    for gpus, weight in PHILLY_GPU_MIX:
        assert (j.num_gpus == gpus).mean() == pytest.approx(weight / total, abs=0.003)
    assert (j.num_gpus == 1).mean() == pytest.approx(0.932, abs=0.003)
    # Nothing optional unless asked.
    assert not j.has_deadlines
    assert np.isnan(j.iterations).all()
    assert set(j.model_name[:100]) == {""}


def test_users_follow_zipf(philly_like):
    users, counts = np.unique(philly_like.user, return_counts=True)
    assert len(users) == 100 and users[0] == "user00"
    by_name = dict(zip(users, counts, strict=True))
    assert by_name["user00"] == counts.max()
    assert by_name["user00"] / by_name["user01"] == pytest.approx(2**1.3, rel=0.05)
    flat = gen(jobs=50_000, users=4, user_zipf_exponent=0.0)
    shares = np.unique(flat.user, return_counts=True)[1] / 50_000
    np.testing.assert_allclose(shares, 0.25, atol=0.01)


def test_pareto_run_times():
    j = gen(3, jobs=N, duration_distribution="pareto")
    assert np.median(j.duration) == pytest.approx(1_144, rel=0.05)
    assert j.duration.mean() == pytest.approx(13_136, rel=0.15)
    spec = SyntheticJobSpec(duration_distribution="pareto")
    assert 0 < duration_shape(spec) < 2


def test_clipped_mean_is_what_the_shape_is_solved_for():
    spec = SyntheticJobSpec(jobs=N, duration_median=100, duration_mean=400, duration_max=5_000)
    j = generate_jobs(spec, np.random.default_rng(5))
    assert j.duration.mean() == pytest.approx(400, rel=0.03)
    assert j.duration.max() <= 5_000


def test_diurnal_arrivals_swing_but_keep_the_mean_rate():
    j = gen(1, jobs=N, arrival="diurnal", mean_interarrival=30.0, diurnal_amplitude=0.5)
    assert (np.diff(j.submit_time) >= 0).all()
    assert np.diff(j.submit_time).mean() == pytest.approx(30.0, rel=0.02)
    hour = (j.submit_time % 86_400 // 3_600).astype(int)
    per_hour = np.bincount(hour, minlength=24)
    assert per_hour.argmin() in (0, 23) and per_hour.argmax() in (11, 12)
    assert per_hour.max() / per_hour.min() == pytest.approx(3.0, rel=0.1)  # (1 + A) / (1 − A)
    flat = gen(1, jobs=1_000, arrival="diurnal", diurnal_amplitude=0.0)
    same = gen(1, jobs=1_000, arrival="poisson")
    np.testing.assert_array_equal(flat.submit_time, same.submit_time)


def test_deadlines_follow_elasticflows_rule():
    j = gen(2, jobs=50_000, deadline_fraction=0.3)
    has = np.isfinite(j.deadline)
    assert has.mean() == pytest.approx(0.3, abs=0.01)
    slack = (j.deadline[has] - j.submit_time[has]) / j.duration[has]
    assert slack.min() >= 0.5 and slack.max() <= 1.5
    assert slack.mean() == pytest.approx(1.0, abs=0.01)


def test_one_knob_changes_only_its_own_column():
    base = SyntheticJobSpec(jobs=10_000)
    a = generate_jobs(base, np.random.default_rng(9))
    b = generate_jobs(
        replace(base, deadline_fraction=0.7, models=ELASTICFLOW_A100_MODELS),
        np.random.default_rng(9),
    )
    for name in ("submit_time", "duration", "num_gpus", "user"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    faster = generate_jobs(replace(base, mean_interarrival=57.2), np.random.default_rng(9))
    np.testing.assert_allclose(faster.submit_time, a.submit_time / 2)
    np.testing.assert_array_equal(faster.duration, a.duration)


def test_models_batch_sizes_and_iterations():
    allowed = dict(ELASTICFLOW_A100_MODELS)
    calls: list[tuple[str, int, int]] = []

    def throughput(model: str, batch: int, gpus: int) -> float:
        calls.append((model, batch, gpus))
        return float("nan") if gpus > 8 else 2.0 * gpus + batch / 64

    spec = SyntheticJobSpec(jobs=20_000, models=ELASTICFLOW_A100_MODELS)
    j = generate_jobs(spec, np.random.default_rng(4), throughput=throughput)
    assert set(j.model_name) == set(allowed)
    for model, batch in zip(j.model_name[:2_000], j.batch_size[:2_000], strict=True):
        assert batch in allowed[model]
    assert len(calls) == len(set(calls))  # once per distinct (model, batch, GPUs)
    small = j.num_gpus <= 8
    expected = j.duration * (2.0 * j.num_gpus + j.batch_size / 64)
    np.testing.assert_allclose(j.iterations[small], expected[small])
    assert np.isnan(j.iterations[~small]).all()  # not runnable there: duration only
    no_rate = generate_jobs(spec, np.random.default_rng(4))
    assert np.isnan(no_rate.iterations).all()
    np.testing.assert_array_equal(no_rate.model_name, j.model_name)


def test_load_for_gpus_hits_the_target():
    spec = load_for_gpus(SyntheticJobSpec(jobs=N), total_gpus=512, target_load=0.8)
    assert offered_load(spec, 512) == pytest.approx(0.8)
    mean_gpus = spec.mean_gpus
    assert spec.mean_interarrival == pytest.approx(mean_gpus * 13_136 / (512 * 0.8))
    j = generate_jobs(spec, np.random.default_rng(11))
    demanded = float((j.num_gpus * j.duration).sum())
    assert demanded / j.submit_time.max() / 512 == pytest.approx(0.8, rel=0.15)
    assert load_for_gpus(spec, 512, 1.6).mean_interarrival == pytest.approx(
        spec.mean_interarrival / 2
    )


def test_zero_jobs_is_an_empty_table():
    j = gen(jobs=0, models=ELASTICFLOW_A100_MODELS, deadline_fraction=1.0)
    assert len(j) == 0 and j.stats()["jobs"] == 0


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("jobs", -1),
        ("jobs", 2.5),
        ("arrival", "bursty"),
        ("mean_interarrival", 0),
        ("mean_interarrival", float("inf")),
        ("diurnal_amplitude", 1.0),
        ("diurnal_period", -5),
        ("duration_distribution", "weibull"),
        ("duration_min", 0),
        ("duration_median", 0.5),
        ("duration_mean", 1_000),
        ("duration_mean", 5_000_000),
        ("duration_max", float("nan")),
        ("gpu_mix", ()),
        ("gpu_mix", ((0, 1.0),)),
        ("gpu_mix", ((1, -1.0),)),
        ("gpu_mix", ((1, 0.0), (2, 0.0))),
        ("users", 0),
        ("user_zipf_exponent", -1),
        ("deadline_fraction", 1.5),
        ("deadline_slack", (1.5, 0.5)),
        ("models", (("bert", ()),)),
        ("models", (("", (64,)),)),
        ("models", (("bert", (0,)),)),
    ],
)
def test_bad_spec_names_the_field_and_value(field, value):
    with pytest.raises(ValueError) as exc:
        SyntheticJobSpec(**{field: value})
    msg = str(exc.value)
    assert f"SyntheticJobSpec.{field}" in msg
    # A list field names its first bad entry; anything else names the whole value.
    per_entry = field in ("gpu_mix", "models") and value and value != ((1, 0.0), (2, 0.0))
    assert repr(value[0] if per_entry else value) in msg


def test_unreachable_mean_says_how_far_it_can_go():
    with pytest.raises(ValueError, match=r"SyntheticJobSpec\.duration_mean must be at most"):
        SyntheticJobSpec(duration_median=100, duration_mean=900, duration_max=1_000)


def test_load_helper_arguments_are_checked():
    spec = SyntheticJobSpec()
    with pytest.raises(ValueError, match="total_gpus"):
        load_for_gpus(spec, 0, 0.5)
    with pytest.raises(ValueError, match="target_load"):
        load_for_gpus(spec, 8, 0)
    with pytest.raises(ValueError, match="total_gpus"):
        offered_load(spec, 1.5)
