"""The Alibaba Lingjun topology file (``topo.csv``: ``ip, DSW, PSW, ASW``, one row per host).

The file names switches but gives no capacities, so the reading rules are ours: a ToR is the pair
(PSW, ASW) — ASW labels repeat under different PSWs — the aggregation switch is the PSW and the
core the DSW; hosts keep file order and ToRs are numbered by first appearance. Each ToR has
``tor_uplinks`` links to its PSW of 8·m·nic_gbps / (tor_uplinks · oversub) each (sized for 8 hosts
whatever the ToR holds); each PSW has ``psw_uplinks`` links to its DSW carrying, together, as much
as all its ToR uplinks (1:1).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from schedlab.errors import InputError
from schedlab.input_files import read_text
from schedlab.network.generators import _Builder
from schedlab.network.topology import CORE, DEFAULT_INTRA_GBPS, LEAF, SPINE, Topology
from schedlab.network.topology_limits import MAX_HOSTS, MAX_SWITCHES

COLUMNS = ("ip", "DSW", "PSW", "ASW")
#: Hosts a ToR's uplinks are sized for.
TOR_DESIGN_HOSTS = 8


def read_lingjun(
    path: Path,
    g: int = 8,
    m: int = 4,
    nic_gbps: float = 200.0,
    tor_uplinks: int = 8,
    psw_uplinks: int = 16,
    oversub: float = 1.0,
    intra_gbps: float = DEFAULT_INTRA_GBPS,
    model: str = "GPU",
) -> Topology:
    """Build the three-tier topology of a Lingjun ``topo.csv``."""
    text = read_text(path, "Lingjun topology file")
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None or [h.strip() for h in header] != list(COLUMNS):
        raise InputError(
            f"expected the header {','.join(COLUMNS)}, got {','.join(header or [])!r}",
            path=str(path),
            row=1,
        )
    rows = []
    seen_ip: dict[str, int] = {}
    for line, row in enumerate(reader, start=2):
        if len(row) != len(COLUMNS):
            raise InputError(
                f"expected {len(COLUMNS)} fields, got {len(row)}", path=str(path), row=line
            )
        values = [v.strip() for v in row]
        for col, value in zip(COLUMNS, values, strict=True):
            if not value:
                raise InputError("empty value", path=str(path), row=line, column=col)
        if values[0] in seen_ip:
            raise InputError(
                f"host {values[0][:16]}… already on line {seen_ip[values[0]]}",
                path=str(path),
                row=line,
                column="ip",
            )
        seen_ip[values[0]] = line
        rows.append((line, *values))
    if not rows:
        raise InputError("no hosts", path=str(path), row=1)
    if len(rows) > MAX_HOSTS:
        raise InputError(f"{len(rows)} hosts, at most {MAX_HOSTS}", path=str(path))

    b = _Builder("lingjun", g, m, nic_gbps, intra_gbps, model)
    dsw: dict[str, int] = {}
    psw: dict[str, int] = {}
    psw_core: dict[str, str] = {}
    tor: dict[tuple[str, str], int] = {}
    tor_rate = TOR_DESIGN_HOSTS * m * nic_gbps / (tor_uplinks * oversub)
    tors_of_psw: dict[str, int] = {}
    for line, _ip, d, p, a in rows:
        if d not in dsw:
            if dsw:  # the file links no DSW to another: their hosts could not reach each other
                raise InputError(
                    f"a second DSW {d!r} (the first is {next(iter(dsw))!r}): the file gives no "
                    "link between DSWs, so their hosts could not reach each other",
                    path=str(path),
                    row=line,
                    column="DSW",
                )
            dsw[d] = b.switch(d, CORE)
        if p not in psw:
            psw[p] = b.switch(p, SPINE)
            psw_core[p] = d
        elif psw_core[p] != d:
            raise InputError(
                f"PSW {p} hangs off DSW {psw_core[p]} earlier, {d} here",
                path=str(path),
                row=line,
                column="DSW",
            )
        if (p, a) not in tor:
            if len(b.switch_names) >= MAX_SWITCHES:
                raise InputError(
                    f"more than {MAX_SWITCHES} switches", path=str(path), row=line, column="ASW"
                )
            tor[(p, a)] = b.switch(f"{p}/{a}", LEAF)
            b.link(tor[(p, a)], psw[p], tor_rate, tor_uplinks)
            tors_of_psw[p] = tors_of_psw.get(p, 0) + 1
        b.hosts(tor[(p, a)], 1)
    for p, s in psw.items():
        rate = tors_of_psw[p] * tor_uplinks * tor_rate / psw_uplinks
        b.link(s, dsw[psw_core[p]], rate, psw_uplinks)
    topo = b.build()
    object.__setattr__(topo, "source", str(path))
    return topo
