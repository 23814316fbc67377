"""serve slurm --config: a TOML file of the settings, the command line winning, bad keys and
values as one-line errors."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from schedlab.cli import main
from schedlab.commands.serve import add_parser, config_from_args


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    return parser.parse_args(["serve", "slurm", *argv])


def test_the_file_fills_what_the_command_line_leaves_out(tmp_path: Path) -> None:
    conf = tmp_path / "serve.toml"
    conf.write_text(
        'policy = "tiresias"\nplacement = "consolidate"\ninterval = 2\nmin-runtime = 30\n'
        'partition = "gpu"\njournal = "/tmp/x.jsonl"\n[params]\nthresholds = "60,600"\n'
    )
    args = parse(["--config", str(conf), "--interval", "0.5", "--param", "starvation=0"])
    cfg = config_from_args(args)
    assert (cfg.policy, cfg.placement, cfg.partition) == ("tiresias", "consolidate", "gpu")
    assert cfg.interval == 0.5  # the command line wins
    assert cfg.min_runtime == 30
    assert dict(cfg.params) == {"thresholds": "60,600", "starvation": "0"}
    assert args.journal == Path("/tmp/x.jsonl")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('policy = "fifo"\nintervall = 2\n', "unknown key 'intervall'"),
        ('policy = "fifo"\ninterval = "fast"\n', "'interval' must be a number of seconds"),
        ('policy = "fifo"\nbackfill = 1\n', "'backfill' must be true or false"),
        ("policy = \n", "not valid TOML"),
        ("interval = 2\n", "'--policy' is required"),
    ],
)
def test_bad_files_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    conf = tmp_path / "serve.toml"
    conf.write_text(text)
    assert main(["serve", "slurm", "--config", str(conf)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("schedlab: error: ") and message in err[0]
