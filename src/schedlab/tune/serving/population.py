"""A generated population of services (synthetic, and labelled so) and its CSV file.

Draws: log-uniform ``α`` ∈ [1, 20] ms, ``β`` ∈ [0.2, 10] ms, ``κ`` ∈ [0.5, 10] core-ms,
``m`` ∈ [0.005, 0.2] GB/sample; ``M₀`` ~ U[0.3, 6] GB; ``v_V100 = 2·LN(0, 0.2)``,
``v_A100 = 4·LN(0, 0.25)``; SLO ∈ {50, 100, 200} ms; a service with no feasible configuration
is drawn again. The last ``holdout`` services are held out (never seen in meta-training).

CSV columns: ``name, split, alpha_ms, beta_ms, kappa_ms, model_gb, gb_per_sample, v_v100,
v_a100, slo_ms`` (``split`` is ``train`` or ``test``).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from schedlab.errors import InputError
from schedlab.tune.serving.model import DEFAULT_HARDWARE, Hardware, Service, evaluate

COLUMNS = (
    "name",
    "split",
    "alpha_ms",
    "beta_ms",
    "kappa_ms",
    "model_gb",
    "gb_per_sample",
    "v_v100",
    "v_a100",
    "slo_ms",
)
SPLITS = ("train", "test")


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def draw_service(rng: np.random.Generator, name: str, hw: Hardware = DEFAULT_HARDWARE) -> Service:
    while True:
        service = Service(
            name,
            alpha_ms=_log_uniform(rng, 1.0, 20.0),
            beta_ms=_log_uniform(rng, 0.2, 10.0),
            kappa_ms=_log_uniform(rng, 0.5, 10.0),
            gb_per_sample=_log_uniform(rng, 0.005, 0.2),
            model_gb=float(rng.uniform(0.3, 6.0)),
            speed=(1.0, 2.0 * float(rng.lognormal(0.0, 0.2)), 4.0 * float(rng.lognormal(0, 0.25))),
            slo_ms=float(rng.choice([50.0, 100.0, 200.0])),
        )
        if evaluate(service, hw).feasible.any():
            return service


#: The largest population ``tune serving gen`` draws.
MAX_SERVICES = 100_000


def generate(n: int, seed: int, holdout: int) -> tuple[list[Service], list[Service]]:
    """``n`` services drawn with ``seed``: (training, held-out) = (first n − holdout, last)."""
    if n < 2 or not 1 <= holdout < n:
        raise InputError(f"need n ≥ 2 services and 1 ≤ holdout < n (got n={n}, holdout={holdout})")
    if n > MAX_SERVICES:  # the study uses 250; a population this size is already a CSV of MBs
        raise InputError(f"'--n' may be at most {MAX_SERVICES:,} services (got {n:,})")
    rng = np.random.default_rng(seed)
    services = [draw_service(rng, f"svc-{i:04d}") for i in range(n)]
    return services[: n - holdout], services[n - holdout :]


def frame(train: list[Service], test: list[Service]) -> pd.DataFrame:
    rows = [
        {
            "name": s.name,
            "split": split,
            "alpha_ms": s.alpha_ms,
            "beta_ms": s.beta_ms,
            "kappa_ms": s.kappa_ms,
            "model_gb": s.model_gb,
            "gb_per_sample": s.gb_per_sample,
            "v_v100": s.speed[1],
            "v_a100": s.speed[2],
            "slo_ms": s.slo_ms,
        }
        for split, group in (("train", train), ("test", test))
        for s in group
    ]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def read_services(path: str | Path) -> tuple[list[Service], list[Service]]:
    """(training, held-out) services of a population CSV; errors name the file, row and column."""
    from schedlab.traces.columns import float_column, line_of, read_text_table

    path = Path(path)
    table = read_text_table(path, list(COLUMNS))
    if len(table) == 0:
        raise InputError("the services file has no rows", path=str(path))
    values = {c: float_column(table, c, path) for c in COLUMNS[2:]}
    train: list[Service] = []
    test: list[Service] = []
    splits, names = table.stripped("split"), table.stripped("name")
    for i in range(len(table)):
        split = str(splits[i])
        if split not in SPLITS:
            raise InputError(
                f"'split' must be train or test (got {split!r})",
                path=str(path),
                row=line_of(table, i),
                column="split",
            )
        try:
            service = Service(
                str(names[i]),
                values["alpha_ms"][i],
                values["beta_ms"][i],
                values["kappa_ms"][i],
                values["model_gb"][i],
                values["gb_per_sample"][i],
                values["slo_ms"][i],
                (1.0, values["v_v100"][i], values["v_a100"][i]),
            )
        except InputError as exc:
            raise InputError(exc.message, path=str(path), row=line_of(table, i)) from None
        (train if split == "train" else test).append(service)
    return train, test


def parse_service(text: str) -> Service:
    """``alpha=5,beta=2.5,kappa=4,m0=1,m=0.05,slo=100[,v100=2,a100=4]`` (ms, GB)."""
    keys = {"alpha", "beta", "kappa", "m0", "m", "slo", "v100", "a100"}
    values: dict[str, float] = {}
    for part in text.split(","):
        key, sep, raw = part.partition("=")
        key = key.strip()
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not sep or key not in keys or key in values or not math.isfinite(value):
            raise InputError(
                "'--service' must look like alpha=5,beta=2.5,kappa=4,m0=1,m=0.05,slo=100"
                f"[,v100=2,a100=4] (got {text!r})"
            )
        values[key] = value
    missing = sorted({"alpha", "beta", "kappa", "m0", "m", "slo"} - set(values))
    if missing:
        raise InputError(f"'--service' is missing {', '.join(missing)} (got {text!r})")
    return Service(
        "service",
        values["alpha"],
        values["beta"],
        values["kappa"],
        values["m0"],
        values["m"],
        values["slo"],
        (1.0, values.get("v100", 2.0), values.get("a100", 4.0)),
    )
