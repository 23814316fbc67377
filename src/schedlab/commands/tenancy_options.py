"""The tenancy options of ``schedlab replay`` and ``schedlab sweep``."""

from __future__ import annotations

import argparse

from schedlab.tenancy.config import DERIVE, UNKNOWN_TENANT
from schedlab.tenancy.registry import NONE, share_policy_names

TENANCY_HELP = """\
tenancy (--tenancy POLICY or --queues FILE; without them nothing below applies):
  Jobs belong to queues (a tree, with deserved quotas, limits, weights, priorities, borrowing
  and lending limits; see docs/tenancy.md for the queue file). The share policy computes each
  queue's fair share and picks the queue; the ordering (--policy) picks the job in it; the
  policy's gate and the placement decide; a job that does not fit may reclaim running jobs of
  other queues by the policy's rule (preempted like any preemption: checkpoint, restart cost).
  Writes tenancy_timeline.parquet, tenancy_queues.csv (one line per queue), tenancy_reclaims.csv,
  tenancy_summary.json and figures/tenancy.png beside the usual files.
examples:
  schedlab replay --cluster 80x8:V100 --trace philly.csv --policy fifo --tenancy kai \\
      --derive-deserved demand-share --out runs/philly-kai
  schedlab replay --cluster 4x8:A100 --trace jobs.csv --policy fifo --queues queues.toml \\
      --out runs/teams"""


def add_tenancy_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("tenancy (see docs/tenancy.md)")
    g.add_argument(
        "--tenancy",
        metavar="POLICY",
        help=f"share policy over the queues: {NONE} (default), {', '.join(share_policy_names())}",
    )
    g.add_argument(
        "--queues", metavar="FILE", help="queue file (TOML or YAML): the tree, quotas, policy"
    )
    g.add_argument(
        "--tenant-column",
        action="append",
        default=None,
        metavar="COLUMN",
        help="trace column naming a job's queue (repeatable: vc then user gives vc/user; "
        "default: vc for philly and helios, queue or user for generic, user otherwise)",
    )
    g.add_argument(
        "--derive-deserved",
        choices=DERIVE,
        help="demand-share: top-level deserved GPUs = floor(GPU-time share x cluster GPUs) "
        "(for traces without quotas; marked synthetic in tenancy_summary.json)",
    )
    g.add_argument(
        "--unknown-tenant",
        choices=UNKNOWN_TENANT,
        help="a job whose queue the queue file does not define: create it (default), send it "
        "to default_queue, or refuse the run",
    )
