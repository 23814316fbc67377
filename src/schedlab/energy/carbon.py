"""Carbon-intensity series: a step function of simulated time, integrated exactly.

Every series is steps ``times[i] → values[i]`` (g CO2e per kWh), each value holding until the
next time; the last holds for one median step, and past that the series repeats (``wrap``) or
holds its last value. :meth:`CarbonSeries.integral` is exact across steps because it works on the
cumulative sum at the step times, so a job that straddles a step is split exactly.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from schedlab.energy.data import country_ci, data_dir, region_ci
from schedlab.errors import InputError
from schedlab.traces.columns import fail_at_first, float_column, line_of, read_text_table
from schedlab.traces.job_common import MAX_SECONDS

HOUR = 3600.0
#: Highest carbon intensity any reader accepts, g CO2e/kWh: the dirtiest grids (lignite) are
#: near 1,100; beyond 2,000 a value is a unit slip (g/MWh, mg/kWh), not a grid.
MAX_CI = 2000.0
#: Shortest CI step, seconds: grid data comes every 5 minutes to an hour, and a series of
#: microsecond steps (milliseconds read as seconds) makes every carbon-aware plan enumerate
#: millions of steps.
MIN_STEP = 1.0
#: Longest synthetic series, days (ten years of hourly values).
MAX_SYNTH_DAYS = 3660


@dataclass(frozen=True)
class CarbonSeries:
    """A step series of carbon intensity with an exact integral."""

    times: np.ndarray  # float64, strictly increasing, seconds
    values: np.ndarray  # float64, g/kWh, ≥ 0
    end: float  # where the last step ends (one period after times[0] when wrapping)
    wrap: bool = True
    label: str = ""

    def __post_init__(self) -> None:
        widths = np.diff(np.append(self.times, self.end))
        cum = np.concatenate(([0.0], np.cumsum(self.values * widths)))
        object.__setattr__(self, "_cum", cum)
        object.__setattr__(self, "_t", self.times.tolist())

    @classmethod
    def constant(cls, value: float, label: str = "") -> CarbonSeries:
        """One value for all time (a single step of one hour that repeats)."""
        return cls(np.array([0.0]), np.array([float(value)]), HOUR, True, label)

    @property
    def period(self) -> float:
        return self.end - float(self.times[0])

    @property
    def is_constant(self) -> bool:
        return bool(np.all(self.values == self.values[0]))

    def _fold(self, t: float) -> tuple[float, float]:
        """(whole periods before ``t``, offset of ``t`` inside the period) under wrapping."""
        k = math.floor((t - self.times[0]) / self.period)
        return k, t - k * self.period

    def _cum_within(self, t: float) -> float:
        """∫ from times[0] to ``t`` for ``times[0] ≤ t ≤ end``."""
        i = bisect.bisect_right(self._t, t) - 1  # type: ignore[attr-defined]
        i = min(max(i, 0), len(self.values) - 1)
        return float(self._cum[i] + self.values[i] * (t - self._t[i]))  # type: ignore[attr-defined]

    def cumulative(self, t: float) -> float:
        """∫ CI dt from ``times[0]`` to ``t`` (negative before it), in g/kWh·s."""
        t0 = float(self.times[0])
        total = float(self._cum[-1])  # type: ignore[attr-defined]
        if self.wrap:
            k, r = self._fold(t)
            return k * total + self._cum_within(r)
        if t < t0:
            return float(self.values[0]) * (t - t0)
        if t > self.end:
            return total + float(self.values[-1]) * (t - self.end)
        return self._cum_within(t)

    def integral(self, a: float, b: float) -> float:
        """∫_a^b CI dt, exact for the step series."""
        return self.cumulative(b) - self.cumulative(a)

    def at(self, t: float) -> float:
        """The intensity holding at ``t`` (right-continuous)."""
        t0 = float(self.times[0])
        if self.wrap:
            t = self._fold(t)[1]
        elif t < t0:
            return float(self.values[0])
        i = bisect.bisect_right(self._t, t) - 1  # type: ignore[attr-defined]
        return float(self.values[min(max(i, 0), len(self.values) - 1)])

    def reciprocal(self, floor: float = 1e-9) -> CarbonSeries:
        """The series of 1/CI on the same steps (values floored at ``floor``), so that
        ∫ dt/CI over any interval is exact too."""
        return CarbonSeries(
            self.times, 1.0 / np.maximum(self.values, floor), self.end, self.wrap, self.label
        )

    def at_many(self, t: np.ndarray) -> np.ndarray:
        """:meth:`at` for many times at once."""
        t = np.asarray(t, dtype=np.float64)
        t0 = float(self.times[0])
        if self.wrap:
            t = t0 + np.mod(t - t0, self.period)
        i = np.searchsorted(self.times, t, side="right") - 1
        return self.values[np.clip(i, 0, len(self.values) - 1)]

    def steps_between(self, a: float, b: float) -> list[float]:
        """Times in (a, b] where the intensity may change (step starts), in order."""
        if self.is_constant or b <= a:
            return []
        t0 = float(self.times[0])
        if not self.wrap:
            return [t for t in self._t if a < t <= b]  # type: ignore[attr-defined]
        out: list[float] = []
        k = math.floor((a - t0) / self.period)
        while True:
            base = k * self.period
            for t in self._t:  # type: ignore[attr-defined]
                at = t + base
                if at > b:
                    return out
                if at > a:
                    out.append(at)
            k += 1


def _median_step(times: np.ndarray) -> float:
    return float(np.median(np.diff(times))) if len(times) > 1 else HOUR


def read_ci_csv(path: str | Path, start: str | None = None, wrap: bool = True) -> CarbonSeries:
    """A ``time,ci_g_per_kwh`` file: seconds, or ISO-8601 UTC times with ``start`` as time 0."""
    frame = read_text_table(path, ["time", "ci_g_per_kwh"])
    values = float_column(frame, "ci_g_per_kwh", path)
    fail_at_first(
        frame,
        values > MAX_CI,
        path,
        "ci_g_per_kwh",
        lambda i: f"'ci_g_per_kwh' must be at most {MAX_CI:g} g/kWh (got {values[i]:g})",
    )
    text = frame["time"].astype(str).str.strip()
    numeric = np.array([_number(s) for s in text], dtype=np.float64)
    if np.isnan(numeric).any():
        if start is None:
            i = int(np.flatnonzero(np.isnan(numeric))[0])
            raise InputError(
                f"'time' {text.iat[i]!r} is not seconds; ISO-8601 times need --ci-start",
                path=str(path),
                row=line_of(frame, i),
                column="time",
            )
        origin = _parse_iso(start, "--ci-start")
        times = np.empty(len(text))
        for i, s in enumerate(text):
            try:
                times[i] = (_parse_iso(s, "time") - origin).total_seconds()
            except InputError as exc:
                raise InputError(
                    exc.message, path=str(path), row=line_of(frame, i), column="time"
                ) from None
    else:
        times = numeric
    fail_at_first(
        frame,
        np.concatenate(([False], np.diff(times) <= 0)),
        path,
        "time",
        lambda i: (
            f"'time' must be strictly increasing (got {text.iat[i]!r} after {text.iat[i - 1]!r})"
        ),
    )
    fail_at_first(
        frame,
        np.concatenate(([False], np.diff(times) < MIN_STEP)),
        path,
        "time",
        lambda i: (
            f"steps must be at least {MIN_STEP:g} s apart (got {text.iat[i]!r} after "
            f"{text.iat[i - 1]!r}; are the times in milliseconds?)"
        ),
    )
    fail_at_first(
        frame,
        np.abs(times) > MAX_SECONDS,
        path,
        "time",
        lambda i: f"'time' {text.iat[i]!r} is more than a century from time 0",
    )
    return CarbonSeries(times, values, float(times[-1]) + _median_step(times), wrap, str(path))


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        return math.nan
    return value if math.isfinite(value) else math.nan


def _parse_iso(text: str, what: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{what} {text!r} is not an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment


@dataclass(frozen=True)
class SynthPreset:
    """Parameters of the synthetic hourly generator (see :func:`synthetic`)."""

    mu: float
    a: float
    h_peak: float
    s: float
    rho: float
    f: float


#: Presets calibrated on the statistics of 2020 GB and DE grid data.
PRESETS: dict[str, SynthPreset] = {
    "gb2020": SynthPreset(215.0, 77.0 / 215.0, 18.0, 0.27, 0.95, 0.1),
    "de2020": SynthPreset(313.0, 75.0 / 313.0, 18.0, 0.33, 0.98, 0.1),
}


def synthetic(
    preset: SynthPreset, *, days: int = 365, seed: int = 0, start_hour: float = 0.0
) -> np.ndarray:
    """Hourly intensities: a daily cosine around ``mu`` plus AR(1) weather noise, floored at
    ``f·mu``. One ``standard_normal(n)`` call, so a seed always gives the same series."""
    n = days * 24
    z = np.random.default_rng(seed).standard_normal(n)
    e = np.empty(n)
    e[0] = preset.s * z[0]
    k = preset.s * math.sqrt(1.0 - preset.rho**2)
    for h in range(1, n):
        e[h] = preset.rho * e[h - 1] + k * z[h]
    h = np.arange(n, dtype=np.float64) + start_hour
    daily = 1.0 + (preset.a / 2.0) * np.cos(2.0 * math.pi * (h - preset.h_peak) / 24.0)
    return np.maximum(preset.f * preset.mu, preset.mu * (daily + e))


#: What each ``synth:`` option may be: (lowest, highest, whole number); ``highest`` excluded
#: for ``rho`` (1 would be a random walk). ``a`` ≤ 2 keeps the daily factor ≥ 0.
SYNTH_RANGES: dict[str, tuple[float, float, bool]] = {
    "days": (1, MAX_SYNTH_DAYS, True),
    "seed": (0, 2**63 - 1, True),
    "start_hour": (-1e6, 1e6, False),
    "mu": (1e-3, MAX_CI, False),
    "a": (0.0, 2.0, False),
    "h_peak": (0.0, 24.0, False),
    "s": (0.0, 10.0, False),
    "rho": (0.0, 1.0, False),
    "f": (0.0, 1.0, False),
}


def _synth_option(option: str, text: str) -> tuple[str, float]:
    """One ``KEY=NUMBER`` of ``--ci synth:``, checked against :data:`SYNTH_RANGES`."""
    key, sep, value = option.partition("=")
    key = key.strip()
    if key not in SYNTH_RANGES:
        allowed = ", ".join(SYNTH_RANGES)
        raise InputError(f"'--ci synth:' has no option {key!r} (it takes: {allowed})")
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    low, high, integral = SYNTH_RANGES[key]
    inside = low <= number < high if key == "rho" else low <= number <= high
    if not sep or not inside or (integral and number != int(number)):
        kind = "a whole number" if integral else "a number"
        upper = f"< {high:g}" if key == "rho" else f"≤ {high:g}"
        raise InputError(
            f"'--ci synth:{text}': option {key!r} must be {kind} ≥ {low:g} and {upper} "
            f"(got {value.strip()!r})"
        )
    return key, number


def _synth(text: str) -> CarbonSeries:
    name, *options = [p.strip() for p in text.split(",")]
    if name not in PRESETS:
        raise InputError(f"unknown carbon-intensity preset {name!r} (known: {', '.join(PRESETS)})")
    fields = dict(PRESETS[name].__dict__)
    given: dict[str, float] = {}
    for option in options:
        key, number = _synth_option(option, text)
        if key in given:
            raise InputError(f"'--ci synth:{text}': option {key!r} is given twice")
        given[key] = number
    fields.update({k: v for k, v in given.items() if k in fields})
    days, seed = int(given.get("days", 365)), int(given.get("seed", 0))
    values = synthetic(
        SynthPreset(**fields), days=days, seed=seed, start_hour=given.get("start_hour", 0.0)
    )
    top = float(values.max())
    if top > MAX_CI:
        raise InputError(
            f"'--ci synth:{text}' gives intensities up to {top:g} g/kWh, above {MAX_CI:g} "
            "(lower 'mu', 'a' or 's')"
        )
    times = np.arange(len(values), dtype=np.float64) * HOUR
    return CarbonSeries(times, values, len(values) * HOUR, True, f"synth:{text}")


def parse_ci(
    spec: str,
    *,
    start: str | None = None,
    wrap: bool = True,
    energy_data: str | Path | None = None,
) -> CarbonSeries:
    """``--ci``: ``const:G``, ``country:ISO3``, ``region:PROVIDER/REGION``, ``synth:PRESET[,k=v]``
    or a CSV file."""
    kind, sep, rest = spec.partition(":")
    if sep and kind == "const":
        value = _number(rest)
        if not 0 <= value <= MAX_CI:
            raise InputError(
                f"'--ci const:' needs a number of g/kWh in 0..{MAX_CI:g} (got {rest!r})"
            )
        return CarbonSeries.constant(value, spec)
    if sep and kind == "country":
        table = country_ci(data_dir(energy_data))
        if rest.strip().upper() not in table:
            raise InputError(f"'--ci country:' has no ISO3 code {rest!r} in the annual table")
        return CarbonSeries.constant(table[rest.strip().upper()], spec)
    if sep and kind == "region":
        table = region_ci(data_dir(energy_data))
        if rest.strip().lower() not in table:
            raise InputError(
                f"'--ci region:' has no region {rest!r} (known e.g.: {', '.join(list(table)[:3])})"
            )
        return CarbonSeries.constant(table[rest.strip().lower()], spec)
    if sep and kind == "synth":
        return _synth(rest)
    if not Path(spec).exists() and not spec.endswith(".csv"):
        raise InputError(
            f"'--ci' must be a CSV file, const:G, country:ISO3, region:PROVIDER/REGION or "
            f"synth:PRESET (got {spec!r})"
        )
    return read_ci_csv(spec, start, wrap)
