"""How fast a job runs on an allocation: trace durations, speed factors, throughput tables."""

from schedlab.perf.models import PerfModel, ThroughputTable, TraceDuration, read_throughput_dir

__all__ = ["PerfModel", "ThroughputTable", "TraceDuration", "read_throughput_dir"]
