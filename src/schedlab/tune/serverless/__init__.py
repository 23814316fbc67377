"""Serverless pipelined training planner (FuncPipe-style).

Modules: :mod:`.profile` (per-layer model profiles, their JSON file and merging),
:mod:`.generators` (profiles of transformer encoders and ResNet bottleneck stacks),
:mod:`.platform` (function memory options, bandwidth, latency and prices; the ``aws`` and
``alicloud`` presets), :mod:`.plan` (a plan and its time, memory and cost),
:mod:`.exhaustive` and :mod:`.milp` (the two exact solvers), :mod:`.search` (objectives,
baselines and the search over data-parallel degree and micro-batches), :mod:`.outputs`
(``plan.json`` and ``plans.csv``).
"""
