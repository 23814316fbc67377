"""Serving auto-configuration (Morphling-style): pick a model-serving pod's GPU type, GPU share,
GPU memory, CPU cores and batch size from few profiling samples.

Modules: :mod:`.space` (the 720 configurations, their order and features), :mod:`.model` (the
analytic performance model and the objective), :mod:`.population` (generated services and
their CSV file), :mod:`.mlp` (a small numpy network with Adam), :mod:`.meta` (Reptile
meta-training and the pooled ablation), :mod:`.tuners` (grid, random, Bayesian optimisation,
meta and meta-pool), :mod:`.bench` (search cost over a held-out population),
:mod:`.outputs` (``tuned.json`` and the pod list ``replay --sharing`` reads).
"""
