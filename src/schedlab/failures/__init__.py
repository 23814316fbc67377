"""Component failures, checkpointing and recovery in replay (see ``docs/failures.md``).

:mod:`.spec` parses ``--failures``, ``--checkpoint`` and ``--failure-reaction``; :mod:`.presets`
holds the Llama 3 and OPT-175B presets; :mod:`.streams` draws per-instance failure times;
:mod:`.trace` reads failure-event traces (and AcmeTrace's XID logs); :mod:`.checkpoint` has the
Young and Daly intervals and the checkpoint cycle; :mod:`.runtime` is what the replay engine
calls; :mod:`.report` turns its record into jobs.csv columns and the summary block. Nothing is
imported here: a replay without ``--failures`` never loads any of it.
"""
