"""Energy and carbon: power models of GPUs and CPU sockets, carbon-intensity series, and the
meter that integrates both exactly between replay events.

The meter is an observer of the replay engine (it never changes what a run does); GPU power
limits act on speed through :class:`schedlab.energy.perf.PowerLimited`, a performance model.
"""
