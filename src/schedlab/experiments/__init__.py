"""Grids of runs (policies × workloads × seeds) and where their workloads come from."""
