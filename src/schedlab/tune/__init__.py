"""Choosing a job's own configuration before it is scheduled.

:mod:`.serverless` plans pipelined training on serverless functions (stages, per-stage function
memory, data-parallel degree, micro-batches); :mod:`.serving` tunes a model-serving pod (GPU type,
GPU share and memory, CPU cores, batch size). ``schedlab tune`` drives both; ``docs/tuning.md``
gives every formula. Nothing is imported here, so a command that does not tune pays nothing.
"""
