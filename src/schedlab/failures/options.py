"""``replay``'s failure options: their arguments, and the failure model they describe."""

from __future__ import annotations

import argparse
from typing import Any

from schedlab.errors import InputError

#: Keys of config.toml for the failure options (strings).
FAILURE_CONFIG_KEYS: dict[str, type] = {
    "failures": str,
    "checkpoint": str,
    "failure_reaction": str,
}


def add_failure_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("failures (off unless --failures is given; see docs/failures.md)")
    g.add_argument(
        "--failures",
        metavar="SPEC",
        help="component failures: a preset (llama3-405b, opt-175b) or items like "
        "'gpu=exp:79230;node=exp:50079;software=exp:337042;repair.node=fixed:24' "
        "(MTBF hours per instance), or 'trace=FILE'",
    )
    g.add_argument(
        "--checkpoint",
        metavar="SPEC",
        help="checkpointing: policy=young|daly|fixed:S|steps:K|none, cost=S (synchronous "
        "seconds), mode=async with block=S,persist=S,delta=D; w_node, w_storage, w_d2h (B/s), "
        "bytes_per_param, detect, launch (default policy=young)",
    )
    g.add_argument(
        "--failure-reaction",
        metavar="SPEC",
        help="requeue (default: back to the queue), shrink (restart on the surviving nodes, grow "
        "back after repair), spares:K (K idle nodes replace failed ones), "
        "exclude-lemons:N,HOURS; comma-joined",
    )


def check_failure_options(
    failures: str | None, checkpoint: str | None, reaction: str | None
) -> tuple[Any, Any, Any] | None:
    """Parse everything before any work; the options after --failures need it.

    An option given with nothing in it (``--failures ""``, from the command line or a config
    file) is refused rather than read as "not given": the run would silently be another one."""
    from schedlab.failures.spec import parse_checkpoint, parse_failures, parse_reaction

    for name, value in (
        ("--failures", failures),
        ("--checkpoint", checkpoint),
        ("--failure-reaction", reaction),
    ):
        if value is not None and not value.replace(";", "").replace(",", "").strip():
            raise InputError(f"'{name}' needs a value (got {value!r})")
    if failures is None:
        for name, value in (("--checkpoint", checkpoint), ("--failure-reaction", reaction)):
            if value:
                raise InputError(f"'{name}' needs '--failures'")
        return None
    return parse_failures(failures), parse_checkpoint(checkpoint), parse_reaction(reaction)


def failure_model(
    failures: str,
    checkpoint: str | None,
    reaction: str | None,
    restart_overhead: float,
    seed: int,
    job_info: Any = None,
    shrink_to: Any = None,
):
    """The FailureModel a replay runs with (``restart_overhead`` > 0 fixes R)."""
    from schedlab.failures.runtime import FailureModel
    from schedlab.failures.trace import read_failure_trace

    parsed = check_failure_options(failures, checkpoint, reaction)
    assert parsed is not None
    spec, ckpt, react = parsed
    if spec.link_effect == "reroute":
        raise InputError(
            "'--failures': link_effect=reroute is not modelled (failed links are not routed "
            "around); use link_effect=interrupt"
        )
    events = read_failure_trace(spec.trace) if spec.trace else []
    return FailureModel(
        spec=spec,
        checkpoint=ckpt,
        reaction=react,
        restart_fixed=restart_overhead if restart_overhead > 0 else None,
        seed=seed,
        job_info=job_info,
        trace_events=events,
        trace_source=spec.trace or "",
        shrink_to=shrink_to,
    )
