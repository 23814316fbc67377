"""Heterogeneity-aware policies: Gavel's allocation family and its round mechanism."""
