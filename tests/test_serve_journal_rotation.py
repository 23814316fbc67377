"""Size-based journal rotation, and readers that read the rotated files in order."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.cli import main
from schedlab.serve.fake import FakeSlurm, fake_job, fake_node
from schedlab.serve.journal import Journal, journal_files, read_journal
from schedlab.serve.loop import ServeConfig, Server

T0 = 1_000_000.0


def record(n: int, pad: int = 0) -> dict:
    return {"time": n, "cycle": n, "job": n, "action": "x", "pad": "p" * pad}


def test_a_full_file_rotates_between_cycles_and_the_oldest_beyond_keep_goes(
    tmp_path: Path,
) -> None:
    """Each record is 60 bytes (a line of 59 + newline); a limit of 100 bytes rotates after
    every second cycle of one record, so 7 cycles make PATH.3 (records 1-2), PATH.2 (3-4),
    PATH.1 (5-6) and PATH (7); with keep=2, PATH.3 is gone."""
    path = tmp_path / "j.jsonl"
    line = len('{"time":1,"cycle":1,"job":1,"action":"x","pad":""}') + 1
    pad = 60 - line
    journal = Journal(path, max_bytes=100, keep=2)
    for n in range(1, 8):
        journal.write(record(n, pad))
        journal.sync()
    journal.close()
    assert [p.name for p in journal_files(path)] == ["j.jsonl.2", "j.jsonl.1", "j.jsonl"]
    assert not (tmp_path / "j.jsonl.3").exists()
    assert (tmp_path / "j.jsonl.2").stat().st_size == 120
    assert [r["job"] for r in read_journal(path)] == [3, 4, 5, 6, 7]
    assert journal.rotations == 3


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 80), min_size=1, max_size=4), min_size=1, max_size=25),
    st.integers(50, 400),
    st.integers(1, 4),
)
def test_readers_see_a_whole_suffix_of_what_was_written(
    tmp_path_factory: pytest.TempPathFactory, cycles: list[list[int]], limit: int, keep: int
) -> None:
    """Whatever the sizes: the records read back are the last ones written, in order, from a
    cycle boundary on; the newest ``keep`` full files are all there; no file is left past
    ``keep``."""
    path = tmp_path_factory.mktemp("rot") / "j.jsonl"
    journal = Journal(path, max_bytes=limit, keep=keep)
    written, starts = [], []
    n = 0
    for cycle in cycles:
        starts.append(n)
        for pad in cycle:
            n += 1
            journal.write(record(n, pad))
            written.append(n)
        journal.sync()
    journal.close()
    read = [r["job"] for r in read_journal(path)]
    assert read == written[len(written) - len(read) :]
    assert read and written.index(read[0]) in starts
    assert len(journal_files(path)) == min(journal.rotations, keep) + 1
    for old in journal_files(path)[:-1]:
        assert old.stat().st_size >= limit


def test_a_restart_reads_the_policy_state_across_rotated_files(tmp_path: Path) -> None:
    """A journal rotated after every cycle: the next scheduler still finds the jobs whose start
    it journaled (it does not journal them again as recovered)."""
    path = tmp_path / "j.jsonl"
    fake = FakeSlurm([fake_node("node1")], [fake_job(1, 2, T0)], start_on_release=True)
    srv = Server(
        fake, ServeConfig(policy="fifo"), Journal(path, max_bytes=1, keep=9), clock=lambda: T0 + 5
    )
    srv.cycle()
    srv.journal.close()
    assert len(journal_files(path)) == 2
    again = Server(fake, ServeConfig(policy="fifo"), Journal(path), clock=lambda: T0 + 6)
    again.cycle()
    again.journal.close()
    assert not [r for r in read_journal(path) if r.get("recovered")]


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--journal-max-mib", "0", "'--journal-max-mib' must be > 0"),
        ("--journal-keep", "0", "'--journal-keep' must be ≥ 1"),
    ],
)
def test_bad_rotation_settings_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], flag: str, value: str, message: str
) -> None:
    assert main(["serve", "slurm", "--policy", "fifo", flag, value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("schedlab: error: ") and message in err[0]
