"""The validation oracle of the network model: a flow-level max-min simulator written apart from
:mod:`schedlab.network` (``flowsim``), the job mixes it is compared on (``mixes``), and the study
(:mod:`schedlab.experiments.oracle_study`)."""
