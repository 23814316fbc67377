"""Fast start: the command imports only what the sub-command it runs needs, and the declared
policy listing matches the policy classes it stands for."""

from __future__ import annotations

import subprocess
import sys

import pytest

from schedlab.policies.api import capabilities
from schedlab.policies.catalog import BUILTIN
from schedlab.policies.registry import ORDERINGS, PLACEMENT_POLICIES, SIZING_POLICIES

HEAVY = ("numpy", "pandas", "matplotlib", "scipy")


def test_the_catalog_is_the_registry() -> None:
    classes = {
        "placement": PLACEMENT_POLICIES,
        "ordering": ORDERINGS,
        "sizing": SIZING_POLICIES,
    }
    declared = {(e.kind, e.name) for e in BUILTIN}
    assert declared == {(k, n) for k, d in classes.items() for n in d}
    for entry in BUILTIN:
        cls = classes[entry.kind][entry.name]
        caps = capabilities(cls)
        assert entry.summary == cls.summary
        assert entry.engines == caps["engines"]
        assert (entry.stateful, entry.preemptive, entry.uses_placement) == (
            caps["stateful"],
            caps["preemptive"],
            caps["uses_placement"],
        ), entry.name


@pytest.mark.parametrize("argv", [["--help"], ["policies"], ["--version"]])
def test_listing_commands_import_no_heavy_library(argv: list[str]) -> None:
    probe = (
        "import sys\nfrom schedlab.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr
    assert done.stdout.strip()


def test_help_lists_every_command_and_a_command_still_has_its_options(capsys) -> None:
    from schedlab.cli import COMMANDS, main

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in COMMANDS)
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    assert "--load" in capsys.readouterr().out
