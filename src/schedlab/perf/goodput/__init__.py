"""Goodput-aware performance models (Pollux, Sia): measured application tables, the throughput
and statistical-efficiency model, its fitting, and a job's progress interval by interval."""
