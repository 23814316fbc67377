"""The LLM performance model: how fast a dense transformer trains on an allocation, and how much
memory each GPU needs, for every way of splitting it (tensor, pipeline, sequence/context and data
parallel, ZeRO stage, micro-batch, recompute). See ``docs/llm.md`` for every formula.

Modules: :mod:`.model` (model configurations and their catalog), :mod:`.hardware` (GPU and node
specifications), :mod:`.profile` (calibration profiles), :mod:`.memory` (bytes per GPU),
:mod:`.steptime` (seconds per step), :mod:`.planner` (the plan space and the search),
:mod:`.calibrate` (fitting a profile to measured points). Nothing is imported here, so a command
that does not plan pays nothing for it.
"""
