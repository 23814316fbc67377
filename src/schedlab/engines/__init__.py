"""Engines apply a policy's decisions to a cluster state and record what happened."""
