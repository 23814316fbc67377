"""``schedlab serve slurm --config FILE``: the scheduler's settings in a TOML file.

Keys are the long options without their dashes (``min-runtime`` or ``min_runtime``), plus
``params`` (a table of ordering parameters) and ``plugins`` (a list). An option given on the
command line wins over the file, and ``--param`` pairs are added to the file's ``params``. A key
the command does not know, or a value of the wrong kind, is an error naming the file, the key and
the value, before anything else happens.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from schedlab.errors import InputError
from schedlab.input_files import read_text

_NUMBER = (int, float)
#: Key → (accepted Python types, what to call it in an error).
KEYS: dict[str, tuple[tuple[type, ...], str]] = {
    "policy": ((str,), "a name"),
    "placement": ((str,), "a name"),
    "backfill": ((bool,), "true or false"),
    "params": ((dict,), "a table"),
    "partition": ((str,), "a partition name"),
    "interval": (_NUMBER, "a number of seconds"),
    "journal": ((str,), "a file name"),
    "journal_max_mib": (_NUMBER, "a number of MiB"),
    "journal_keep": ((int,), "a whole number"),
    "seed": ((int,), "a whole number"),
    "until_idle": ((bool,), "true or false"),
    "quiet": ((bool,), "true or false"),
    "shadow": ((bool,), "true or false"),
    "metrics_port": ((int,), "a port number"),
    "min_runtime": (_NUMBER, "a number of seconds"),
    "grace": (_NUMBER, "a number of seconds"),
    "state_dir": ((str,), "a folder name"),
    "topology": ((str,), "a topology.conf file or a topology spec"),
    "plugins": ((list,), "a list of module:Class names"),
    "tenancy": ((str,), "a share policy name"),
    "queues": ((str,), "a queue file (TOML or YAML)"),
}


def check_port(value: int, what: str, path: Path | None = None) -> int:
    """A TCP port to listen on or ask: 1..65535 (0 would pick a port nobody is told)."""
    if not 1 <= value <= 65535:
        where = None if path is None else str(path)
        raise InputError(f"{what} must be a port in 1..65535 (got {value})", path=where)
    return value


#: ``serve kubernetes``'s keys: the engine-free ones above and its own.
KUBE_KEYS: dict[str, tuple[tuple[type, ...], str]] = {
    **{
        k: v
        for k, v in KEYS.items()
        if k not in ("partition", "state_dir", "topology", "journal_max_mib", "journal_keep")
    },
    "scheduler_name": ((str,), "a scheduler name"),
    "kubeconfig": ((str,), "a file name"),
    "context": ((str,), "a kubeconfig context"),
    "lease_namespace": ((str,), "a namespace"),
    "lease_name": ((str,), "a Lease name"),
    "lease_seconds": (_NUMBER, "a number of seconds"),
    "identity": ((str,), "an identity"),
    "extender": ((bool,), "true or false"),
    "listen": ((str,), "HOST:PORT"),
    "topology_labels": ((str,), "label keys, lowest level first, comma-separated"),
    "queues_from_cluster": ((bool,), "true or false"),
}
#: Keys whose values are file names.
PATH_KEYS = frozenset({"journal", "state_dir", "kubeconfig"})


def read_config(path: Path, keys: dict[str, tuple[tuple[type, ...], str]] = KEYS) -> dict[str, Any]:
    """The file's settings, keyed like the parsed options (``min_runtime``); ``keys``: the
    command's keys (``serve slurm``'s by default, :data:`KUBE_KEYS` for ``serve kubernetes``)."""
    try:
        raw = tomllib.loads(read_text(path, "config file"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=str(path)) from None
    out: dict[str, Any] = {}
    for key, value in raw.items():
        name = key.replace("-", "_")
        if name not in keys:
            known = ", ".join(k.replace("_", "-") for k in keys)
            raise InputError(f"unknown key '{key}' (known: {known})", path=str(path))
        types, what = keys[name]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise InputError(f"'{key}' must be {what} (got {value!r})", path=str(path))
        out[name] = value
    if "metrics_port" in out:
        check_port(out["metrics_port"], "'metrics_port'", path)
    for k, v in (out.get("params") or {}).items():
        if isinstance(v, dict | list):
            raise InputError(f"params.{k} must be a single value (got {v!r})", path=str(path))
    return out
