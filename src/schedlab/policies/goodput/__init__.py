"""Goodput-aware policies and the baselines of Pollux's simulator (fixed intervals)."""
