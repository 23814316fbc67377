"""Reproductions of published results behind one command (``schedlab reproduce``).

A study is a function ``reproduce(ctx: StudyContext) -> Reproduction`` in the package's
``experiments`` modules, registered by one entry in ``catalog.toml``. It runs its replays or pack
runs through ``ctx.map`` (workers and progress come with the context), writes what it likes into
``ctx.out`` and returns its :class:`~schedlab.reproduce.checks.Check` rows: each published value
beside ours with a tolerance and a verdict. The command, the fidelity tests and the README's
tables all go through :func:`~schedlab.reproduce.runner.run_study`.
"""
