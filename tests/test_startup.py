"""Pay for what you use: each command imports only what the run it was given needs (the listing
commands no heavy library; a plain replay no network, energy, sharing, solver or plotting code;
``pack --no-figures`` no matplotlib), and the declared policy catalog matches the classes it names.
"""

from __future__ import annotations

import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

from schedlab.policies.api import capabilities
from schedlab.policies.catalog import BUILTIN, KINDS
from schedlab.policies.ordering.base import Ordering
from schedlab.policies.placement.base import PlacementPolicy
from schedlab.policies.registry import ORDERINGS, PLACEMENT_POLICIES, SIZING_POLICIES
from schedlab.policies.scheduler import SchedulingPolicy

HEAVY = ("numpy", "pandas", "matplotlib", "scipy", "httpx", "yaml")
CLASSES = {"placement": PLACEMENT_POLICIES, "ordering": ORDERINGS, "sizing": SIZING_POLICIES}
BASES = {"placement": PlacementPolicy, "ordering": Ordering, "sizing": SchedulingPolicy}


def test_the_catalog_is_the_registry() -> None:
    declared = {(e.kind, e.name) for e in BUILTIN}
    assert declared == {(k, n) for k, d in CLASSES.items() for n in d}
    assert {e.kind for e in BUILTIN} == set(KINDS)
    for entry in BUILTIN:
        module, _, attr = entry.reference.partition(":")
        cls = CLASSES[entry.kind][entry.name]
        assert cls is getattr(import_module(module), attr), entry.reference
        assert issubclass(cls, BASES[entry.kind]), entry.name
        assert cls.name == entry.name
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
    _assert_prints_without(argv, HEAVY)


def _assert_prints_without(argv: list[str], libraries: tuple[str, ...]) -> None:
    """A fresh ``schedlab ARGV`` prints something and has imported none of ``libraries``."""
    probe = (
        "import sys\nfrom schedlab.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {libraries!r} if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr
    assert done.stdout.strip()


#: What a command's help, or a command that only lists or plans, has no use for.
NOT_FOR_HELP = ("pandas", "pyarrow", "matplotlib", "scipy", "httpx", "yaml")


@pytest.mark.parametrize(
    "argv",
    [
        ["sweep", "--help"],
        ["replay", "--help"],
        ["pack", "--help"],
        ["trace", "--help"],
        ["report", "--help"],
        ["serve", "--help"],
        ["serve", "kubernetes", "--help"],
        ["plan", "--help"],
        ["reproduce", "--help"],
        ["reproduce", "--list"],
        ["gen", "--help"],
        ["demo", "--help"],
        ["plan", "--model", "llama3-8b", "--cluster", "1x8:A100", "--batch-tokens", "4M"],
    ],
)
def test_a_commands_help_imports_no_table_plot_or_solver_library(argv: list[str]) -> None:
    _assert_prints_without(argv, NOT_FOR_HELP)


def test_help_lists_every_command_and_a_command_still_has_its_options(capsys) -> None:
    from schedlab.cli import COMMANDS, main

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in COMMANDS)
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    assert "--load" in capsys.readouterr().out


def _modules_after(argv: list[str], cwd: Path) -> set[str]:
    """The modules a fresh ``schedlab ARGV`` process has imported when it ends (it must
    succeed)."""
    probe = (
        "import sys\nfrom schedlab.cli import main\n"
        f"code = main({argv!r})\n"
        "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return set(done.stderr.split())


def _unwanted(modules: set[str], prefixes: tuple[str, ...], allowed: set[str]) -> list[str]:
    return sorted(
        m for m in modules - allowed if any(m == p or m.startswith(p + ".") for p in prefixes)
    )


#: What a replay without --topology, --power-model/--ci, --sharing or a solver policy must not
#: load: it reads its trace and writes its tables without pandas too. The option names of the
#: network and energy (network.options, energy.options and energy.spec) and the plans a start
#: may carry (network.plan, plain data) are allowed.
NOT_FOR_A_PLAIN_REPLAY = (
    "matplotlib",
    "httpx",  # serve kubernetes only
    "yaml",
    "schedlab.serve.kubernetes",
    "scipy",
    "pandas",
    "pyarrow",
    "schedlab.network",
    "schedlab.energy",
    "schedlab.engines.shared_time",
    "schedlab.engines.pack",
    "schedlab.engines.filler",
    "schedlab.commands.replay_sharing",
    "schedlab.report",
    "schedlab.policies.elastic",
    "schedlab.policies.fixed_size",
    "schedlab.policies.carbon",
    "schedlab.policies.placement.network",
    # tenancy, failures, LLM jobs and Slurm's habits: only their option names are read
    "schedlab.tenancy.replay",
    "schedlab.tenancy.scheduler",
    "schedlab.tenancy.metrics",
    "schedlab.failures.runtime",
    "schedlab.perf.llm",
    "schedlab.engines.job_gate",
)
PLAIN_DATA = {
    "schedlab.network",
    "schedlab.network.options",
    "schedlab.network.plan",
    "schedlab.energy",
    "schedlab.energy.options",
    "schedlab.energy.spec",
}

TRACE = """job_id,submit_time,num_gpus,duration
a,0,2,100
b,5,4,50
c,9,1,30
"""


def test_a_plain_fifo_replay_imports_no_network_energy_sharing_solver_or_plots(
    tmp_path: Path,
) -> None:
    (tmp_path / "jobs.csv").write_text(TRACE)
    argv = ["replay", "--cluster", "1x8:V100", "--trace", "jobs.csv", "--policy", "fifo"]
    modules = _modules_after([*argv, "--out", "run"], tmp_path)
    assert (tmp_path / "run" / "summary.json").is_file()
    assert "schedlab.policies.ordering.fifo" in modules  # the probe sees what the run used
    assert _unwanted(modules, NOT_FOR_A_PLAIN_REPLAY, PLAIN_DATA) == []
    # Only the policies named are imported: no other ordering or placement.
    others = {"sjf", "srtf", "tiresias", "edf"}
    assert not {f"schedlab.policies.ordering.{o}" for o in others} & modules
    assert "schedlab.policies.placement.consolidate" not in modules


def test_a_replay_with_a_network_imports_it(tmp_path: Path) -> None:
    # The other side of the test above: the probe would see the network if a run loaded it.
    (tmp_path / "jobs.csv").write_text(TRACE)
    argv = ["replay", "--trace", "jobs.csv", "--policy", "fifo", "--out", "run"]
    topology = "leafspine:leaves=2,spines=1,hosts_per_leaf=1,g=8,m=1,nic_gbps=100"
    modules = _modules_after([*argv, "--topology", topology], tmp_path)
    assert "schedlab.network.sharing" in modules and "schedlab.network.topology" in modules


PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec
p0,4000,8192,1,500,
p1,8000,16384,1,1000,
p2,2000,4096,0,0,
"""
NODES = """sn,cpu_milli,memory_mib,gpu,model
n0,32000,131072,4,T4
n1,64000,262144,8,V100M16
"""


@pytest.mark.parametrize("figures", [False, True])
def test_pack_imports_matplotlib_only_to_draw_figures(tmp_path: Path, figures: bool) -> None:
    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "pods.csv").write_text(PODS)
    argv = ["pack", "--nodes", "nodes.csv", "--pods", "pods.csv", "--policy", "fgd"]
    argv += ["--out", "run", *([] if figures else ["--no-figures"])]
    modules = _modules_after(argv, tmp_path)
    assert ("matplotlib" in modules) == figures
    assert (tmp_path / "run" / "figures").is_dir() == figures
    assert (tmp_path / "run" / "report.html").is_file() == figures
    # One run's figures and page need no data frame: pandas (and pyarrow under it) stay out.
    unwanted = ("scipy", "pandas", "pyarrow", "schedlab.network", "schedlab.energy")
    assert _unwanted(modules, unwanted, PLAIN_DATA) == []


def test_a_lazy_public_name_wins_over_its_sub_module_of_the_same_name() -> None:
    # schedlab.network.footprint is a module and the function it defines: importing the module
    # first must still leave the package's public name the function, as an eager __init__ did.
    probe = (
        "import schedlab.network.footprint\n"
        "import schedlab.network as n\n"
        "from schedlab.network import footprint, Topology\n"
        "print(callable(footprint), n.footprint is footprint, Topology.__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.split() == ["True", "True", "Topology"], done.stderr


def test_the_sharing_options_default_is_the_engines_trace_mode() -> None:
    from schedlab.commands.sharing_options import DEFAULT_MODE
    from schedlab.engines.shared_time import TRACE

    assert DEFAULT_MODE == TRACE
