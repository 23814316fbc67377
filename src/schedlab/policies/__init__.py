"""Scheduling policies: placement plugins (where); ordering and sizing come later."""
