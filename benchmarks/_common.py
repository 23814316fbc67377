"""Helpers for benchmark scripts: where the public traces are, and peak memory."""

from __future__ import annotations

import resource
import sys
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
OPENB = SHARED / "traces" / "alibaba-gpu-2023"


def require_openb() -> Path:
    if not OPENB.is_dir():
        sys.exit(f"benchmark needs the public trace at {OPENB} (not found)")
    return OPENB


def peak_rss_mib(children: bool = False) -> float:
    """Peak resident memory in MiB (ru_maxrss is KiB on Linux)."""
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss / 1024
