"""The serving tuners, the meta-learning network and the generated population."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from schedlab.errors import InputError
from schedlab.tune.serving import bench, meta, mlp, population, tuners
from schedlab.tune.serving.model import Service, evaluate
from schedlab.tune.serving.space import features

SERVICE = Service("u", 5.0, 2.5, 4.0, 1.0, 0.05, 100.0)
PERF = evaluate(SERVICE)


def unique_optimum_service() -> Service:
    """A generated service whose optimum is a single configuration."""
    rng = np.random.default_rng(3)
    while True:
        s = population.draw_service(rng, "x")
        if tuners.optimal_set(evaluate(s)).sum() == 1:
            return s


def test_random_search_needs_360_5_samples_on_average_for_a_unique_optimum() -> None:
    perf = evaluate(unique_optimum_service())
    optimal = tuners.optimal_set(perf)
    costs = [
        tuners.run("random", perf, 720, np.random.default_rng(seed), stop=optimal).search_cost(
            optimal
        )
        for seed in range(2000)
    ]
    assert all(c is not None for c in costs)
    assert np.mean(costs) == pytest.approx(360.5, rel=0.03)


def test_grid_search_cost_is_the_optimum_index_plus_one() -> None:
    perf = evaluate(unique_optimum_service())
    optimal = tuners.optimal_set(perf)
    run = tuners.run("grid", perf, 720, np.random.default_rng(0), stop=optimal)
    assert run.search_cost(optimal) == perf.best + 1 == len(run.samples)
    assert run.samples == list(range(perf.best + 1))


def test_a_sample_observes_the_objective_with_3_percent_noise() -> None:
    oracle = tuners.Oracle(PERF, np.random.default_rng(0))
    best = PERF.best
    ratios = np.array([oracle(best) for _ in range(4000)]) / PERF.objective[best]
    assert np.log(ratios).std() == pytest.approx(0.03, rel=0.05)
    assert oracle(int(np.flatnonzero(~PERF.feasible)[0])) == 0.0


def test_bo_samples_each_configuration_once_and_repeats_with_its_seed() -> None:
    pytest.importorskip("sklearn")
    a = tuners.run("bo", PERF, 25, np.random.default_rng(7))
    b = tuners.run("bo", PERF, 25, np.random.default_rng(7))
    assert a.samples == b.samples and len(set(a.samples)) == 25
    # It learns: the incumbent after 25 samples beats the best of its 5 random starts.
    assert PERF.objective[a.incumbent()] > PERF.objective[a.incumbent(5)]
    assert a.samples[:5] == [int(c) for c in np.random.default_rng(7).choice(720, 5, replace=False)]


def test_bo_without_scikit_learn_names_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.gaussian_process", None)
    with pytest.raises(InputError, match=r"pip install 'schedlab\[tune\]'"):
        tuners.run("bo", PERF, 10, np.random.default_rng(0))


def test_the_network_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(8, 7))
    y = rng.uniform(size=8)
    w = mlp.init(7, rng, hidden=5)
    _, grads = mlp.gradients(w, x, y)
    for layer, index in ((0, (2, 3)), (1, (4,)), (2, (1, 4)), (4, (3, 0)), (5, (0,))):
        bumped = [a.copy() for a in w]
        bumped[layer][index] += 1e-6
        up = float(np.mean((mlp.predict(bumped, x) - y) ** 2))
        bumped[layer][index] -= 2e-6
        down = float(np.mean((mlp.predict(bumped, x) - y) ** 2))
        assert grads[layer][index] == pytest.approx((up - down) / 2e-6, rel=1e-4, abs=1e-8)


@pytest.fixture(scope="module")
def small_meta() -> tuple[list[Service], list[Service], meta.MetaWeights]:
    train, test = population.generate(30, 1, 5)
    return train, test, meta.train(train, 0, meta.MetaSettings(outer_steps=150))


def test_meta_training_learns_the_shape_of_good_configurations(small_meta) -> None:
    _train, test, weights = small_meta
    x = features()
    fresh = mlp.init(x.shape[1], np.random.default_rng(0))
    for w in (weights.meta, weights.pool):
        errs_trained = [np.mean((mlp.predict(w, x) - t) ** 2) for t in meta.targets(test)]
        errs_fresh = [np.mean((mlp.predict(fresh, x) - t) ** 2) for t in meta.targets(test)]
        assert np.mean(errs_trained) < np.mean(errs_fresh)


def test_meta_tuner_starts_at_the_networks_argmax_and_never_repeats(small_meta) -> None:
    _, test, weights = small_meta
    perf = evaluate(test[0])
    run = tuners.run("meta", perf, 15, np.random.default_rng(0), weights.meta)
    assert run.samples[0] == int(np.argmax(mlp.predict(weights.meta, features())))
    assert len(set(run.samples)) == len(run.samples) == 15
    again = tuners.run("meta", perf, 15, np.random.default_rng(0), weights.meta)
    assert again.samples == run.samples
    with pytest.raises(InputError, match="needs meta-weights"):
        tuners.run("meta", perf, 5, np.random.default_rng(0))


def test_meta_weights_round_trip_through_their_file(small_meta, tmp_path) -> None:
    _, _, weights = small_meta
    meta.save(tmp_path / "m.npz", weights)
    back = meta.load(tmp_path / "m.npz")
    assert all(np.array_equal(a, b) for a, b in zip(back.meta, weights.meta, strict=True))
    (tmp_path / "bad.npz").write_bytes(b"not an archive")
    with pytest.raises(InputError, match="not a meta-weights file"):
        meta.load(tmp_path / "bad.npz")


def test_the_population_is_seeded_feasible_and_round_trips(tmp_path) -> None:
    train, test = population.generate(12, 5, 3)
    again = population.generate(12, 5, 3)
    assert train == again[0] and test == again[1] and (len(train), len(test)) == (9, 3)
    assert all(evaluate(s).feasible.any() for s in train + test)
    assert all(s.slo_ms in (50.0, 100.0, 200.0) and 1 <= s.alpha_ms <= 20 for s in train)
    path = tmp_path / "services.csv"
    population.frame(train, test).to_csv(path, index=False)
    back_train, back_test = population.read_services(path)
    assert [s.name for s in back_test] == [s.name for s in test]
    assert back_train[0].alpha_ms == pytest.approx(train[0].alpha_ms)
    text = path.read_text().splitlines()
    text[2] = text[2].replace(",train,", ",validation,")
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(InputError, match=r"services.csv:3, column 'split'"):
        population.read_services(path)


def test_bench_medians_count_missed_runs_as_above_the_budget() -> None:
    import pandas as pd

    runs = pd.DataFrame(
        {
            "tuner": ["a"] * 4 + ["b"] * 3,
            "search_cost": [3, 5, np.nan, np.nan, 2, 4, 6],
            **{f"regret_{k}": 0.0 for k in bench.REGRET_AT},
        }
    )
    table = bench.summary(runs)
    medians = dict(zip(table.tuner, table.median_search_cost, strict=True))
    assert medians["a"] == np.inf and medians["b"] == 4.0
    runs.loc[3, "search_cost"] = 7
    assert bench.summary(runs).median_search_cost.iloc[0] == 6.0  # 3, 5, 7, inf
    assert bench.ratios(bench.summary(runs), "b") == {"a": 6.0 / 4.0}
