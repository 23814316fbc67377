"""LLM training-job traces (format ``llm``): a model, a global batch and a token budget per job.

Detected by a header with ``model`` and ``tokens`` (or ``steps``). Required columns:

``job_id``, ``submit_time``, ``num_gpus``
    As in the generic format (``num_gpus``: the GPUs the job asks for).
``model``
    A catalog model (``schedlab plan`` lists them in ``docs/llm.md``), one from ``--models``, or
    any name with the inline fields ``layers, hidden, heads, vocab, seq_len`` (and optionally
    ``kv_heads, ffn, act``) filled in.
``batch_tokens``
    Global batch in tokens (a whole number of sequences of the model).
``tokens`` or ``steps``
    The work: tokens to train, or optimizer steps (× the batch).

Optional: ``min_gpus``, ``max_gpus`` (elastic range; default both ``num_gpus``), ``gpu_model``
(the GPU the planner assumes; default the node's), ``profile`` (calibration profile; default the
run's), ``plan`` (fields the planner must keep, e.g. ``t=8,p=16``; ``batch=flexible`` rounds the
batch to a multiple of d·b), ``ckpt_policy`` (``young``, ``daly``, ``fixed:S``, ``steps:K``,
``none``), ``ckpt_bytes_per_param`` [14], ``job_type`` (pretrain, sft, eval, debug, mllm, other),
``restart_s`` (fixed restart overhead), ``user``, ``deadline``, ``gpus_per_node``, ``num_nodes``,
``exclusive``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from schedlab.errors import InputError
from schedlab.model.llm_jobs import LLMJobs
from schedlab.traces.columns import (
    TextTable,
    float_column,
    int_column,
    line_of,
    read_text_table,
    unique_names,
)
from schedlab.traces.generic import _blank_float, _blank_int, _geometry, deadline_column
from schedlab.traces.job_common import (
    MAX_GPUS_PER_JOB,
    ReadResult,
    finish,
    require_one_of,
    text_column,
)

FORMAT = "llm"
COLUMNS = ["job_id", "submit_time", "num_gpus", "model", "batch_tokens"]
INLINE = ["layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq_len", "act"]
OPTIONAL = [
    "tokens",
    "steps",
    *INLINE,
    "min_gpus",
    "max_gpus",
    "gpu_model",
    "profile",
    "plan",
    "ckpt_policy",
    "ckpt_bytes_per_param",
    "job_type",
    "restart_s",
    "user",
    "deadline",
    "gpus_per_node",
    "num_nodes",
    "exclusive",
]
JOB_TYPES = ("pretrain", "sft", "eval", "debug", "mllm", "other")
DEFAULT_CKPT_BYTES_PER_PARAM = 14.0


def _fail(message: str, path: Path, frame: TextTable, i: int, column: str) -> InputError:
    return InputError(message, path=str(path), row=line_of(frame, i), column=column)


def _models(frame: TextTable, path: Path, catalog_file: str | None) -> np.ndarray:
    """One ModelConfig per row: the catalog's, or built from the row's inline fields."""
    from schedlab.perf.llm.model import builtin_models, model_from_mapping, read_catalog

    catalog = dict(builtin_models())
    if catalog_file:
        catalog.update(read_catalog(catalog_file))
    names = frame.stripped("model").tolist()
    inline = [c for c in INLINE if c in frame.columns]
    out = np.empty(len(frame), dtype=object)
    cache: dict[tuple, object] = {}
    for i, name in enumerate(names):
        cells = {c: frame[c][i].strip() for c in inline}
        given = {c: v for c, v in cells.items() if v}
        if not name:
            raise _fail("'model' is blank", path, frame, i, "model")
        key = (name, tuple(sorted(given.items())))
        if key in cache:
            out[i] = cache[key]
            continue
        if not given:
            if name not in catalog:
                import difflib

                close = difflib.get_close_matches(name, list(catalog), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise _fail(
                    f"unknown model {name!r}{hint} (or give its layers, hidden, heads, vocab, "
                    "seq_len in the row)",
                    path,
                    frame,
                    i,
                    "model",
                )
            cache[key] = catalog[name]
        else:
            if name in catalog:  # two definitions of one name: the row's would pass as the other
                raise _fail(
                    f"model {name!r} is in the catalog, and the row gives sizes of its own "
                    f"({', '.join(given)}): leave them blank to use the catalog's, or give the "
                    "row's model a name of its own",
                    path,
                    frame,
                    i,
                    next(iter(given)),
                )
            table: dict[str, object] = {}
            for c, v in given.items():
                if c == "act":
                    table[c] = v
                    continue
                try:
                    table[c] = int(v)
                except ValueError:
                    raise _fail(
                        f"'{c}' must be a whole number (got {v!r})", path, frame, i, c
                    ) from None
            try:
                cache[key] = model_from_mapping(name, table, "the trace")
            except InputError as exc:
                column = next((c for c in ("heads", "hidden", "kv_heads") if c in given), "model")
                raise _fail(exc.message, path, frame, i, column) from None
        out[i] = cache[key]
    return out


def _plans(frame: TextTable, path: Path) -> tuple[np.ndarray, np.ndarray]:
    from schedlab.perf.llm.space import parse_plan

    n = len(frame)
    plans = np.empty(n, dtype=object)
    flexible = np.zeros(n, dtype=bool)
    cells = text_column(frame, "plan")
    for i in range(n):
        text = "" if cells is None else str(cells[i])
        parts = [p.strip() for p in text.replace(";", ",").split(",") if p.strip()]
        keep = []
        for part in parts:
            key, _, value = part.partition("=")
            if key.strip() == "batch":
                if value.strip() not in ("flexible", "fixed"):
                    raise _fail(
                        f"batch must be flexible or fixed (got {value.strip()!r})",
                        path,
                        frame,
                        i,
                        "plan",
                    )
                flexible[i] = value.strip() == "flexible"
            else:
                keep.append(part)
        try:
            fixed = parse_plan(",".join(keep), "'plan'") if keep else {}
        except InputError as exc:
            raise _fail(exc.message, path, frame, i, "plan") from None
        plans[i] = tuple(sorted(fixed.items()))
    return plans, flexible


def read_llm(
    path: str | Path,
    *,
    drop_zero: bool = True,
    min_duration: float = 0.0,
    models: str | None = None,
) -> ReadResult:
    """Read an ``llm`` trace (see the module docstring); ``models`` is a TOML file of extra
    ``[models.NAME]`` tables."""
    from schedlab.failures.spec import parse_checkpoint
    from schedlab.perf.llm.hardware import get_gpu
    from schedlab.perf.llm.profile import get_profile

    path = Path(path)
    frame = read_text_table(path, COLUMNS, OPTIONAL)
    require_one_of(frame, ["tokens", "steps"], path)
    job_id = unique_names(frame, "job_id", path)
    submit = float_column(frame, "submit_time", path)
    num_gpus = int_column(frame, "num_gpus", path, low=0, high=MAX_GPUS_PER_JOB)
    model = _models(frame, path, models)
    seq = np.array([m.seq_len for m in model], dtype=np.int64)
    batch_tokens = int_column(frame, "batch_tokens", path, low=1)
    bad = batch_tokens % seq != 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _fail(
            f"'batch_tokens' {batch_tokens[i]} is not a whole number of {seq[i]}-token sequences",
            path,
            frame,
            i,
            "batch_tokens",
        )
    batch = batch_tokens // seq
    tokens = _blank_float(frame, "tokens", path)
    steps = _blank_float(frame, "steps", path)
    tokens = np.where(np.isnan(tokens), steps * batch_tokens, tokens)
    bad = ~(tokens > 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        column = "tokens" if "tokens" in frame.columns else "steps"
        raise _fail("the job needs 'tokens' or 'steps' > 0", path, frame, i, column)
    low = _blank_int(frame, "min_gpus", path)
    high = _blank_int(frame, "max_gpus", path)
    low = num_gpus.copy() if low is None else np.where(low == 0, num_gpus, low)
    high = num_gpus.copy() if high is None else np.where(high == 0, num_gpus, high)
    bad = (low > num_gpus) | (high < num_gpus)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _fail("needs min_gpus ≤ num_gpus ≤ max_gpus", path, frame, i, "min_gpus")
    plans, flexible = _plans(frame, path)
    texts = {c: text_column(frame, c) for c in ("gpu_model", "profile", "ckpt_policy", "job_type")}
    empty = np.full(len(frame), "", dtype=object)
    for column, check in (
        ("gpu_model", get_gpu),
        ("profile", get_profile),
        ("ckpt_policy", lambda v: parse_checkpoint(f"policy={v}")),
    ):
        values = texts[column]
        for i, v in enumerate([] if values is None else values.tolist()):
            if v:
                try:
                    check(v)
                except InputError as exc:
                    raise _fail(exc.message, path, frame, i, column) from None
    job_type = (
        texts["job_type"]
        if texts["job_type"] is not None
        else np.full(len(frame), "other", dtype=object)
    )
    job_type = np.array([(v or "other").lower() for v in job_type.tolist()], dtype=object)
    bad = ~np.isin(job_type, JOB_TYPES)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _fail(
            f"job_type must be one of {', '.join(JOB_TYPES)} (got {job_type[i]!r})",
            path,
            frame,
            i,
            "job_type",
        )
    bpp = _blank_float(frame, "ckpt_bytes_per_param", path)
    bpp = np.where(np.isnan(bpp), DEFAULT_CKPT_BYTES_PER_PARAM, bpp)
    deadline = deadline_column(frame, submit, path)
    llm = LLMJobs(
        model=model,
        batch=batch.astype(np.int64),
        tokens=tokens.astype(np.float64),
        min_gpus=low.astype(np.int64),
        max_gpus=high.astype(np.int64),
        profile=texts["profile"] if texts["profile"] is not None else empty.copy(),
        plan=plans,
        flexible=flexible,
        gpu_model=texts["gpu_model"] if texts["gpu_model"] is not None else empty.copy(),
        ckpt_policy=texts["ckpt_policy"] if texts["ckpt_policy"] is not None else empty.copy(),
        ckpt_bytes_per_param=bpp.astype(np.float64),
        job_type=job_type,
        restart_s=_blank_float(frame, "restart_s", path),
    )
    cols: dict[str, object] = {
        "job_id": job_id,
        "submit_time": submit,
        "num_gpus": num_gpus,
        "deadline": deadline,
        "user": text_column(frame, "user"),
        "model_name": np.array([m.name for m in model], dtype=object),
        "batch_size": batch.astype(np.int64),
        **_geometry(frame, num_gpus, path),
    }
    result = finish(path, FORMAT, frame, cols, drop_zero=drop_zero, min_duration=min_duration)
    keep = np.flatnonzero(np.isin(job_id, result.jobs.job_id))
    return ReadResult(
        jobs=replace(result.jobs, llm=llm.take(keep)),
        dropped=result.dropped,
        format=FORMAT,
        rows=result.rows,
    )
