"""One entry point for every job-trace format: name → reader, and a guess from the header.

``read_jobs(path)`` is what the CLI and experiments call; it reads the header, picks the format
(or takes the one named), and passes options through. Each format's options are the keyword
arguments of its reader; all take ``drop_zero`` (default True: drop jobs with 0 GPUs or 0 run
time) and ``min_duration`` (default 0 s), and report what they dropped in ``ReadResult.dropped``.
"""

from __future__ import annotations

import csv
import difflib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from schedlab.errors import InputError
from schedlab.input_files import check_input_file
from schedlab.traces.acme import read_acme
from schedlab.traces.alibaba_jobs import read_alibaba_jobs
from schedlab.traces.elasticflow import read_elasticflow, read_elasticflow_itp
from schedlab.traces.generic import read_generic
from schedlab.traces.helios import read_helios
from schedlab.traces.job_common import ReadResult
from schedlab.traces.llm import read_llm
from schedlab.traces.philly import read_philly


@dataclass(frozen=True)
class TraceFormat:
    """A readable format: its reader, one line for help texts, and the header columns that
    identify it (all must be present)."""

    name: str
    reader: Callable[..., ReadResult]
    summary: str
    signature: frozenset[str]

    @property
    def options(self) -> list[str]:
        params = inspect.signature(self.reader).parameters.values()
        return [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]


#: Known formats, in the order detection tries them (most specific header first).
TRACE_FORMATS: dict[str, TraceFormat] = {
    f.name: f
    for f in (
        TraceFormat(
            "acme",
            read_acme,
            "AcmeTrace trace_seren.csv / trace_kalos.csv (Shanghai AI Lab: gpu_num, type, state)",
            frozenset({"job_id", "gpu_num", "node_num", "type", "state"}),
        ),
        TraceFormat(
            "llm",
            read_llm,
            "LLM training jobs: model, batch_tokens and tokens (or steps); speed from the planner",
            frozenset({"job_id", "model", "batch_tokens"}),
        ),
        TraceFormat(
            "alibaba",
            read_alibaba_jobs,
            "Alibaba GPU-2023 pod list with times (openb_pod_list_*.csv)",
            frozenset({"name", "num_gpu", "gpu_milli"}),
        ),
        TraceFormat(
            "philly",
            read_philly,
            "Philly, condensed by Pollux/AdaptDL (philly.csv: timestamp, duration, num_gpus)",
            frozenset({"timestamp", "num_gpus"}),
        ),
        TraceFormat(
            "helios",
            read_helios,
            "Helios cluster_log.csv (SenseTime: job_id, gpu_num, submit/start/end_time)",
            frozenset({"job_id", "gpu_num", "submit_time"}),
        ),
        TraceFormat(
            "elasticflow-itp",
            read_elasticflow_itp,
            "ElasticFlow ITP clusters, raw or enriched (job_id, submission_time, num_gpu)",
            frozenset({"job_id", "submission_time", "num_gpu"}),
        ),
        TraceFormat(
            "elasticflow",
            read_elasticflow,
            "ElasticFlow artifact traces (job_id, submit_time, num_gpu, iteration, ddl)",
            frozenset({"job_id", "submit_time", "num_gpu"}),
        ),
        TraceFormat(
            "generic",
            read_generic,
            "schedlab's own job CSV (job_id, submit_time, num_gpus, duration/iterations)",
            frozenset({"job_id", "submit_time", "num_gpus"}),
        ),
    )
}


def _known() -> str:
    return ", ".join(TRACE_FORMATS)


def read_header(path: str | Path) -> list[str]:
    """The header row of a CSV file, stripped (a cheap look, for detection)."""
    path = check_input_file(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            header = next(csv.reader(fh), None)
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", path=str(path)) from None
    except csv.Error as exc:
        raise InputError(f"not a readable CSV file ({exc})", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror}", path=str(path)) from None
    if not header:
        raise InputError("file is empty (expected a header row)", path=str(path))
    return [c.strip() for c in header]


def detect_format(path: str | Path) -> str:
    """Name of the format whose identifying columns are all in the header."""
    header = read_header(path)
    present = set(header)
    for fmt in TRACE_FORMATS.values():
        if fmt.signature <= present:
            return fmt.name
    from schedlab.traces.alibaba_2025 import looks_like

    if looks_like(header):
        raise InputError(_not_jobs(), path=str(path), row=1)
    raise InputError(
        f"cannot tell the trace format from the header ({', '.join(header)}); "
        f"name it explicitly (one of: {_known()})",
        path=str(path),
        row=1,
    )


def _not_jobs() -> str:
    """What to do with the instance trace a job command cannot take."""
    from schedlab.traces.alibaba_2025 import FORMAT

    return (
        f"this is an instance trace (format {FORMAT}: Alibaba GPU v2025 serving instances that "
        "run until deleted, not jobs with a run time); 'schedlab trace stats' reads it and "
        "experiments/prism_disaggregation.py places it; replay and sweep take job traces "
        f"(one of: {_known()})"
    )


def get_format(name: str) -> TraceFormat:
    """The format called ``name`` (case-insensitive); a typo gets a suggestion."""
    key = str(name).strip().lower()
    if key in TRACE_FORMATS:
        return TRACE_FORMATS[key]
    from schedlab.traces.alibaba_2025 import FORMAT

    if key == FORMAT:
        raise InputError(_not_jobs())
    close = difflib.get_close_matches(key, list(TRACE_FORMATS), n=1, cutoff=0.5)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise InputError(f"unknown trace format {name!r}; {hint}known formats: {_known()}")


def read_jobs(path: str | Path, format: str | None = None, **options: object) -> ReadResult:
    """Read a job trace into canonical jobs; ``format`` None means detect it from the header.

    ``options`` go to the format's reader (e.g. ``drop_zero=False``, ``keep_cpu_only=True``); an
    option the format does not have is an InputError listing the ones it has.
    """
    fmt = get_format(format) if format is not None else TRACE_FORMATS[detect_format(path)]
    allowed = fmt.options
    unknown = [k for k in options if k not in allowed]
    if unknown:
        raise InputError(
            f"trace format {fmt.name!r} has no option {unknown[0]!r} "
            f"(its options: {', '.join(allowed)})"
        )
    return fmt.reader(path, **options)
