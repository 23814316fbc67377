"""Scheduling policies: placement plugins (where), and later ordering and sizing (when, how much)."""
