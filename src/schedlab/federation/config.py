"""The federation file (TOML): ``[federation]`` settings, ``[[site]]`` tables and
``[[data_store]]`` tables. Every refusal names the file, the table and the key, before any work.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from schedlab.errors import InputError
from schedlab.federation.egress import Egress, parse_egress
from schedlab.input_files import read_text

DISPATCHERS = (
    "round-robin",
    "least-loaded",
    "multikueue-allatonce",
    "multikueue-incremental",
    "cheapest",
    "greenest",
    "earliest-finish",
    "joint",
)
MULTIKUEUE = ("multikueue-allatonce", "multikueue-incremental")
STAGE_IN = ("before-queue", "on-admit")
WAN_SHARING = ("fair", "none")
FEDERATION_KEYS = {
    "dispatcher", "weights", "runtime_estimate", "stage_in", "reconsider", "move_running",
    "wan_sharing", "default_data_site", "default_data_gb", "origin", "incremental",
    "ci_offset_s", "wan_kwh_per_gb", "move_margin", "default_ckpt_gb",
}  # fmt: skip
#: Dispatchers whose score a queued or running job can be re-scored by (``reconsider``).
RESCORABLE = ("least-loaded", "cheapest", "greenest", "earliest-finish", "joint")
SITE_KEYS = {
    "name", "cluster", "topology", "ordering", "backfill", "placement", "params", "ci", "pue",
    "price_gpu_hour", "egress", "wan",
}  # fmt: skip
STORE_KEYS = {"name", "egress", "wan"}


@dataclass(frozen=True)
class Link:
    """One direction of a WAN link."""

    gbps: float
    rtt_ms: float

    def seconds(self, gb: float) -> float:
        """Transfer time of ``gb`` on an otherwise idle link."""
        return self.rtt_ms / 1000.0 + 8.0 * gb / self.gbps


@dataclass(frozen=True)
class Place:
    """A site (runs jobs) or a data store (holds data only)."""

    name: str
    egress: Egress
    wan: dict[str, Link]
    runs_jobs: bool
    cluster: str = ""
    topology: str | None = None
    ordering: str = "fifo"
    backfill: bool = False
    placement: str = "bestfit"
    params: dict[str, str] = field(default_factory=dict)
    ci: str | None = None
    pue: float = 1.0
    price_gpu_hour: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Federation:
    path: str
    sites: tuple[Place, ...]
    stores: tuple[Place, ...]
    dispatcher: str = "least-loaded"
    weights: tuple[float, float, float] = (1.0, 1.0, 1.0)  # time, cost, carbon
    runtime_factor: float = 1.0  # oracle: 1
    runtime_estimate: str = "oracle"
    stage_in: str = "before-queue"
    wan_sharing: str = "fair"
    default_data_site: str = "origin"
    default_data_gb: float = 0.0
    data_gb_per_gpu: bool = False
    origin: str = ""
    step: int = 3
    round_s: float = 300.0
    ci_offset_s: float = 0.0
    wan_kwh_per_gb: float = 0.0
    #: ``stage_in`` as the file gives it (MultiKueue forces on-admit whatever it says).
    declared_stage_in: str = "before-queue"
    #: Seconds between re-scorings of the jobs (``reconsider = "periodic:S"``); 0: never.
    reconsider_s: float = 0.0
    #: Running jobs move too (checkpoint, restart overhead, checkpoint data over the WAN).
    move_running: bool = False
    #: A job moves only if another site's score is below ``(1 − margin)`` × its own site's.
    move_margin: float = 0.1
    default_ckpt_gb: float = 0.0
    ckpt_gb_per_gpu: bool = False
    #: The ``[federation]`` keys the file gives (a setting no dispatcher of the run reads is
    #: refused: :func:`check_settings_read`).
    given: frozenset[str] = frozenset()

    @property
    def places(self) -> dict[str, Place]:
        return {p.name: p for p in (*self.sites, *self.stores)}

    def link(self, src: str, dst: str) -> Link | None:
        """The directed link ``src → dst``: its own entry, else the reverse one (symmetric)."""
        places = self.places
        own = places[src].wan.get(dst)
        return own if own is not None else places[dst].wan.get(src)

    @property
    def data_site_default(self) -> str:
        return self.origin if self.default_data_site == "origin" else self.default_data_site


def with_dispatcher(fed: Federation, name: str) -> Federation:
    """``fed`` under another dispatcher (a sweep's axis); MultiKueue stages data on admission."""
    from dataclasses import replace

    if name not in DISPATCHERS:
        raise InputError(f"unknown dispatcher {name!r} (known: {', '.join(DISPATCHERS)})")
    if fed.reconsider_s > 0:
        check_rescorable(name, f"{fed.path}: [federation], key 'reconsider'")
    stage_in = "on-admit" if name in MULTIKUEUE else fed.stage_in
    if fed.dispatcher in MULTIKUEUE and name not in MULTIKUEUE:
        stage_in = fed.declared_stage_in
    return replace(fed, dispatcher=name, stage_in=stage_in)


#: ``[federation]`` settings that only some dispatchers read.
READ_BY = {"weights": ("joint",), "incremental": ("multikueue-incremental",)}


def check_settings_read(fed: Federation, dispatchers: list[str]) -> None:
    """A setting that none of the run's ``dispatchers`` reads is an error, not passed over."""
    for key, readers in READ_BY.items():
        if key in fed.given and not set(readers) & set(dispatchers):
            raise InputError(
                f"{fed.path}: [federation], key {key!r}: only the {' and '.join(readers)} "
                f"dispatcher reads it, and this run has {', '.join(dispatchers)}"
            )


def check_rescorable(dispatcher: str, where: str) -> None:
    """Moving jobs re-scores them by the dispatcher's own score: round-robin has none, and
    MultiKueue's copies already wait at every nominated site."""
    if dispatcher not in RESCORABLE:
        raise InputError(
            f"{where}: moving jobs needs a dispatcher with a score ({', '.join(RESCORABLE)}); "
            f"{dispatcher!r} has none"
        )


def _tagged(value: object, tag: str) -> float:
    """The number of ``"TAG:NUMBER"``; NaN when ``value`` is not so written."""
    kind, _, text = str(value).partition(":")
    try:
        number = float(text)
    except ValueError:
        return math.nan
    return number if kind == tag and math.isfinite(number) else math.nan


def _amount(value: object, where: str, key: str) -> tuple[float, bool]:
    """GB as a number ≥ 0 or ``"per_gpu:X"``: (amount, per GPU?)."""
    if not isinstance(value, str):
        return _number(value, where, key), False
    amount = _tagged(value, "per_gpu")
    if not amount >= 0:
        raise InputError(f"{where}, key '{key}': GB ≥ 0 or 'per_gpu:X' (got {value!r})")
    return amount, True


def _reconsider(value: object, where: str) -> float:
    """``none`` → 0, ``periodic:S`` → S (> 0)."""
    if value == "none":
        return 0.0
    seconds = _tagged(value, "periodic")
    if not seconds > 0:
        raise InputError(
            f"{where}, key 'reconsider': 'none' or 'periodic:S' with S > 0 seconds (got {value!r})"
        )
    return seconds


def _number(value: object, where: str, key: str, low: float = 0.0, strict: bool = False) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or (value <= low if strict else value < low):  # type: ignore[operator]
        bound = f"> {low:g}" if strict else f"≥ {low:g}"
        raise InputError(f"{where}, key '{key}': must be a number {bound} (got {value!r})")
    return float(value)  # type: ignore[arg-type]


def _choice(value: object, where: str, key: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise InputError(
            f"{where}, key '{key}': must be one of {', '.join(choices)} (got {value!r})"
        )
    return str(value)


def _unknown(table: dict, allowed: set[str], where: str) -> None:
    extra = sorted(set(table) - allowed)
    if extra:
        raise InputError(
            f"{where}, key '{extra[0]}': unknown (known: {', '.join(sorted(allowed))})"
        )


def _wan(value: object, where: str) -> dict[str, Link]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{where}, key 'wan': a table of {{PLACE = {{gbps, rtt_ms}}}}")
    out: dict[str, Link] = {}
    for other, link in value.items():
        key = f"wan.{other}"
        if not isinstance(link, dict) or set(link) - {"gbps", "rtt_ms"} or "gbps" not in link:
            raise InputError(f"{where}, key '{key}': give {{gbps = G, rtt_ms = R}}")
        out[other] = Link(
            _number(link["gbps"], where, f"{key}.gbps", strict=True),
            _number(link.get("rtt_ms", 0.0), where, f"{key}.rtt_ms"),
        )
    return out


def _place(table: object, index: int, kind: str, file: str) -> Place:
    if not isinstance(table, dict):
        raise InputError(f"{file}: [[{kind}]] #{index + 1} must be a table")
    name = table.get("name")
    where = f"{file}: [[{kind}]] #{index + 1}" + (f" ({name!r})" if name else "")
    if not isinstance(name, str) or not name.strip():
        what = "missing" if name is None else f"must be a non-empty string (got {name!r})"
        raise InputError(f"{where}, key 'name': {what}")
    egress = parse_egress(table.get("egress"), where)
    wan = _wan(table.get("wan"), where)
    if kind == "data_store":
        _unknown(table, STORE_KEYS, where)
        return Place(name, egress, wan, runs_jobs=False)
    _unknown(table, SITE_KEYS, where)
    cluster, topology = table.get("cluster"), table.get("topology")
    if cluster is not None and not isinstance(cluster, str):
        raise InputError(f"{where}, key 'cluster': must be a cluster spec such as \"4x8:V100\" "
                         f"(got {cluster!r})")  # fmt: skip
    if not isinstance(cluster, str) or not cluster.strip():
        if not isinstance(topology, str) or not topology.strip():
            raise InputError(f"{where}, key 'cluster': missing (a site needs a cluster)")
        cluster = ""
    prices = table.get("price_gpu_hour", {})
    if not isinstance(prices, dict):
        raise InputError(f"{where}, key 'price_gpu_hour': a table {{MODEL = $ per GPU-hour}}")
    for key in ("ordering", "placement", "ci"):
        if key in table and not isinstance(table[key], str):
            raise InputError(f"{where}, key '{key}': must be a string (got {table[key]!r})")
    params = table.get("params", {})
    if not isinstance(params, dict):
        raise InputError(f"{where}, key 'params': a table of ordering parameters")
    backfill = table.get("backfill", False)
    if not isinstance(backfill, bool):
        raise InputError(f"{where}, key 'backfill': must be true or false (got {backfill!r})")
    return Place(
        name,
        egress,
        wan,
        runs_jobs=True,
        cluster=cluster,
        topology=topology if isinstance(topology, str) else None,
        ordering=table.get("ordering", "fifo"),
        backfill=backfill,
        placement=table.get("placement", "bestfit"),
        params={str(k): str(v) for k, v in params.items()},
        ci=table.get("ci"),
        pue=_number(table.get("pue", 1.0), where, "pue", low=1.0),
        price_gpu_hour={
            str(m).upper(): _number(p, where, f"price_gpu_hour.{m}") for m, p in prices.items()
        },
    )


def read_federation(path: str | Path) -> Federation:
    """Parse and check a federation file (paths in it are relative to the file)."""
    file = str(path)
    text = read_text(path, "federation file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not a TOML file ({exc})", path=file) from None
    _unknown(data, {"federation", "site", "data_store"}, f"{file}: top level")
    settings = data.get("federation", {})
    where = f"{file}: [federation]"
    if not isinstance(settings, dict):
        raise InputError(f"{where} must be a table")
    _unknown(settings, FEDERATION_KEYS, where)
    sites = tuple(_place(t, i, "site", file) for i, t in enumerate(data.get("site", [])))
    stores = tuple(
        _place(t, i, "data_store", file) for i, t in enumerate(data.get("data_store", []))
    )
    if not sites:
        raise InputError(f"{file}: [[site]]: none (a federation needs at least one site)")
    names = [p.name for p in (*sites, *stores)]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise InputError(f"{file}: [[site]]/[[data_store]], key 'name': {dup!r} is given twice")
    sites = tuple(_resolve_paths(s, Path(path).parent) for s in sites)
    for p in (*sites, *stores):
        for other in p.wan:
            if other not in names or other == p.name:
                raise InputError(
                    f"{file}: [[{'site' if p.runs_jobs else 'data_store'}]] {p.name!r}, key "
                    f"'wan.{other}': no other site or data store is named so"
                )
    dispatcher = _choice(
        settings.get("dispatcher", "least-loaded"), where, "dispatcher", DISPATCHERS
    )
    weights = settings.get("weights", {})
    if not isinstance(weights, dict) or set(weights) - {"time", "cost", "carbon"}:
        raise InputError(f"{where}, key 'weights': a table {{time, cost, carbon}}")
    w = tuple(
        _number(weights.get(k, 1.0), where, f"weights.{k}") for k in ("time", "cost", "carbon")
    )
    if sum(w) <= 0:
        raise InputError(f"{where}, key 'weights': at least one weight must be > 0")
    estimate = str(settings.get("runtime_estimate", "oracle"))
    factor = 1.0
    if estimate != "oracle":
        factor = _tagged(estimate, "user-factor")
        if not factor > 0:
            raise InputError(
                f"{where}, key 'runtime_estimate': oracle or user-factor:F with F > 0 "
                f"(got {estimate!r})"
            )
    stage_in = _choice(settings.get("stage_in", "before-queue"), where, "stage_in", STAGE_IN)
    declared = stage_in
    if dispatcher in MULTIKUEUE:
        stage_in = "on-admit"  # a copy's data moves only once a site admits it
    reconsider_s = _reconsider(settings.get("reconsider", "none"), where)
    move_running = settings.get("move_running", False)
    if not isinstance(move_running, bool):
        raise InputError(
            f"{where}, key 'move_running': must be true or false (got {move_running!r})"
        )
    if move_running and reconsider_s == 0:
        raise InputError(
            f"{where}, key 'move_running': running jobs move when jobs are reconsidered; "
            'set reconsider = "periodic:S"'
        )
    if reconsider_s > 0:
        check_rescorable(dispatcher, f"{where}, key 'reconsider'")
    margin = _number(settings.get("move_margin", 0.1), where, "move_margin")
    if margin >= 1:
        raise InputError(f"{where}, key 'move_margin': must be below 1 (got {margin!r})")
    ckpt_gb, ckpt_per_gpu = _amount(settings.get("default_ckpt_gb", 0.0), where, "default_ckpt_gb")
    origin = settings.get("origin", sites[0].name)
    if origin not in {s.name for s in sites}:
        raise InputError(f"{where}, key 'origin': no site is named {origin!r}")
    data_site = settings.get("default_data_site", "origin")
    if data_site != "origin" and data_site not in names:
        raise InputError(f"{where}, key 'default_data_site': no site or data store {data_site!r}")
    gb, per_gpu = _amount(settings.get("default_data_gb", 0.0), where, "default_data_gb")
    incremental = settings.get("incremental", {})
    if not isinstance(incremental, dict) or set(incremental) - {"step", "round_s"}:
        raise InputError(f"{where}, key 'incremental': a table {{step, round_s}}")
    step = incremental.get("step", 3)
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise InputError(f"{where}, key 'incremental.step': an integer ≥ 1 (got {step!r})")
    return Federation(
        path=file,
        sites=sites,
        stores=stores,
        dispatcher=dispatcher,
        weights=w,  # type: ignore[arg-type]
        runtime_factor=factor,
        runtime_estimate=estimate,
        stage_in=stage_in,
        declared_stage_in=declared,
        wan_sharing=_choice(settings.get("wan_sharing", "fair"), where, "wan_sharing", WAN_SHARING),
        default_data_site=str(data_site),
        default_data_gb=gb,
        data_gb_per_gpu=per_gpu,
        origin=str(origin),
        step=step,
        round_s=_number(
            incremental.get("round_s", 300.0), where, "incremental.round_s", strict=True
        ),
        ci_offset_s=_number(settings.get("ci_offset_s", 0.0), where, "ci_offset_s"),
        wan_kwh_per_gb=_number(settings.get("wan_kwh_per_gb", 0.0), where, "wan_kwh_per_gb"),
        reconsider_s=reconsider_s,
        move_running=move_running,
        move_margin=margin,
        default_ckpt_gb=ckpt_gb,
        ckpt_gb_per_gpu=ckpt_per_gpu,
        given=frozenset(settings),
    )


def _resolve_paths(site: Place, base: Path) -> Place:
    """Cluster, topology and carbon files named relative to the federation file."""
    from dataclasses import replace

    def rel(spec: str | None) -> str | None:
        if not spec or (":" in spec.split("/")[0] and not Path(spec).exists()):
            return spec  # NxG:MODEL, const:G, leafspine:… are specs, not files
        candidate = base / spec
        return str(candidate) if not Path(spec).is_absolute() and candidate.exists() else spec

    return replace(
        site, cluster=rel(site.cluster) or "", topology=rel(site.topology), ci=rel(site.ci)
    )
