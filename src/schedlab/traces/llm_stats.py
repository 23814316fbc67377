"""``trace stats`` of an llm trace: per model, jobs, tokens and GPU-hours at the planned rates."""

from __future__ import annotations

from collections import defaultdict

from schedlab.model.jobs import JobTable


def llm_stats(jobs: JobTable, gpu_name: str = "H100", per_node: int = 8) -> dict[str, object]:
    """GPU-hours of each job = tokens / (tokens/s of its best plan on ``num_gpus`` GPUs in whole
    nodes of ``per_node``) × ``num_gpus``; a job with no feasible plan there is counted apart."""
    from schedlab.perf.llm.hardware import NodeNet, get_gpu
    from schedlab.perf.llm.planner import Options, plan
    from schedlab.perf.llm.profile import get_profile
    from schedlab.perf.llm.space import Shape

    gpu = get_gpu(gpu_name)
    llm = jobs.llm
    out: dict[str, dict[str, float]] = defaultdict(
        lambda: {"jobs": 0, "tokens": 0.0, "gpu_hours": 0.0, "unplannable": 0}
    )
    for job in range(len(jobs)):
        model = llm.model[job]
        if model is None:
            continue
        m = out[model.name]
        m["jobs"] += 1
        m["tokens"] += float(llm.tokens[job])
        n = int(jobs.num_gpus[job])
        counts = (per_node,) * (n // per_node) + ((n % per_node,) if n % per_node else ())
        shape = Shape(counts, per_node)
        options = Options(fixed=llm.plan[job], flexible_batch=bool(llm.flexible[job]))
        profile = get_profile(str(llm.profile[job]) or "generic")
        best = plan(
            model, int(llm.batch[job]), gpu, shape, profile, NodeNet.default(gpu, per_node),
            options, 1,
        ).best  # fmt: skip
        if best is None:
            m["unplannable"] += 1
        else:
            m["gpu_hours"] += float(llm.tokens[job]) / best.tokens_per_s * n / 3600.0
    return {"gpu": gpu.name, "models": dict(out)}
