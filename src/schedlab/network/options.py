"""The names of the network options (``--net-sharing``, ``--net-routing``, ``--net-control``) and
their checks, apart from the network model: a replay without ``--topology`` parses and checks its
command line with these and imports none of the topology, routing or sharing machinery."""

from __future__ import annotations

from schedlab.errors import InputError

#: ``--net-sharing`` choices: how jobs that share a link slow each other.
RULES: tuple[str, ...] = (
    "isolated",
    "random-phase",
    "worst-case",
    "maxmin",
    "interleaved",
    "priority",
)
#: The rule used when none is given.
DEFAULT_RULE = "random-phase"


def check_rule(rule: str) -> str:
    if rule not in RULES:
        raise InputError(
            f"unknown sharing rule: field 'net-sharing', value {rule!r} (known: {', '.join(RULES)})"
        )
    return rule


#: ``--net-routing`` choices: ``policy`` needs a network controller, which replay has not got.
REPLAY_ROUTING = ("ecmp", "spray", "source")


def check_routing(mode: str) -> str:
    if mode not in REPLAY_ROUTING:
        raise InputError(
            f"unknown routing mode: field 'net_routing', value {mode!r} "
            f"(known: {', '.join(REPLAY_ROUTING)})"
        )
    return mode


#: ``--net-control`` choices: who decides paths (and, for ``crux``, priorities).
NET_CONTROLS = ("ecmp", "spray", "crux")


def resolve_net_control(
    control: str | None, routing: str | None, sharing: str | None
) -> tuple[str, str, str]:
    """(control, routing, sharing) of a run from ``--net-control``, ``--net-routing`` and
    ``--net-sharing`` as given (None = not given).

    ``ecmp`` and ``spray`` are routings without a controller: the same as ``--net-routing`` with
    that value, which may be given too only if it agrees. ``crux`` routes every cross-leaf flow
    aggregate itself and sets priority levels, which the ``priority`` rule enforces: it refuses
    any ``--net-routing`` and any ``--net-sharing`` but ``priority``. Without ``--net-control``
    the routing is ``--net-routing`` (default ecmp), as before; the control is then "".
    """
    if control is None or control == "":
        return "", check_routing(routing or "ecmp"), check_rule(sharing or DEFAULT_RULE)
    if control not in NET_CONTROLS:
        raise InputError(
            f"unknown network control: field 'net_control', value {control!r} "
            f"(known: {', '.join(NET_CONTROLS)})"
        )
    if control == "crux":
        if routing is not None:
            raise InputError(
                f"'--net-control crux' chooses every path itself: drop '--net-routing {routing}'"
            )
        if sharing is not None and sharing != "priority":
            raise InputError(
                "'--net-control crux' enforces its levels with '--net-sharing priority' "
                f"(got '--net-sharing {sharing}')"
            )
        return control, "ecmp", "priority"
    if routing is not None and routing != control:
        raise InputError(
            f"'--net-control {control}' contradicts '--net-routing {routing}' "
            "(--net-control ecmp|spray is that routing)"
        )
    return control, control, check_rule(sharing or DEFAULT_RULE)
