"""Several clusters as one federation: ``schedlab replay --federation FILE``.

A manager receives every job and dispatches it to one site (or, MultiKueue-style, copies it to
several and keeps the first that starts it); each site runs its own replay engine — its own
ordering, placement, power meter and carbon series — in lock-step with the others. Input data
is staged over WAN links that cost egress. The formulas are in ``docs/federation.md``.
"""
