"""Live fault injection for serve's tests, on this machine only (see ``docs/failures.md``):
:mod:`.proxy` (the project's own user-space fault proxy), :mod:`.netns` (network namespaces and
relays the harness owns), :mod:`.invariants` (the oracle over job markers, Slurm's records and the
journal), :mod:`.scenarios` (S1–S8 against the fake Slurm)."""
