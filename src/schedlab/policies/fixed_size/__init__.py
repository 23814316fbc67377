"""Policies that run every job at exactly its requested GPU count (Themis, Chronus, Gandiva)."""
