"""Policies that size jobs (choose their GPU counts over time), not only order them."""
