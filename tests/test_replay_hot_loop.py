"""Invariants the replay engine's hot loop relies on."""

from __future__ import annotations

from dataclasses import fields

from schedlab.model.snapshot import Snapshot


def test_the_snapshot_fields_the_engine_passes_by_position_keep_their_order() -> None:
    # The engine builds two snapshots per decision point positionally (keywords cost twice as
    # much); a field inserted before these would shift them silently.
    names = [f.name for f in fields(Snapshot)]
    assert names[:11] == [
        "now",
        "jobs",
        "cluster",
        "state",
        "runtime",
        "work",
        "reference_rate",
        "pending_set",
        "running_set",
        "new_pending",
        "free_gpus",
    ]
