"""Speed of the LLM planner: uncached and cached plan() calls, and the whole CLI command.

Prints the median of several runs for each (model, GPUs) case, the plans considered, and the
wall time of ``schedlab plan`` for Llama 3 405B on 16,384 H100s (process start included).

    python benchmarks/plan_speed.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from schedlab.perf.llm.hardware import get_gpu
from schedlab.perf.llm.model import get_model
from schedlab.perf.llm.planner import plan
from schedlab.perf.llm.profile import get_profile
from schedlab.perf.llm.space import Shape

CASES = [
    ("llama3-8b", 1, 512),
    ("llama3-70b", 64, 512),
    ("gpt-sc21-530b", 315, 2520),
    ("llama3-405b", 2048, 2048),
]


def main() -> None:
    profile = get_profile("generic")
    print(f"{'model':16s} {'GPUs':>6s} {'plans':>8s} {'uncached ms':>12s} {'cached µs':>10s}")
    for name, nodes, batch in CASES:
        model, gpu, shape = get_model(name), get_gpu("H100"), Shape.uniform(nodes, 8)
        uncached = []
        for _ in range(5):
            plan.cache_clear()
            start = time.perf_counter()
            search = plan(model, batch, gpu, shape, profile)
            uncached.append(time.perf_counter() - start)
        cached = []
        for _ in range(1000):
            start = time.perf_counter()
            plan(model, batch, gpu, shape, profile)
            cached.append(time.perf_counter() - start)
        print(
            f"{name:16s} {shape.total:6d} {search.considered:8d} "
            f"{1e3 * statistics.median(uncached):12.1f} {1e6 * statistics.median(cached):10.2f}"
        )
    cmd = [sys.executable, "-m", "schedlab", "plan", "--model", "llama3-405b", "--cluster",
           "2048x8:H100", "--json"]  # fmt: skip
    walls = []
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
    print(
        f"schedlab plan llama3-405b on 16,384 H100: {statistics.median(walls):.2f} s wall "
        "(median of 5)"
    )


if __name__ == "__main__":
    main()
