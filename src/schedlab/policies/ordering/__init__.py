"""Queue orders (when a job runs), independent of placement (where it runs)."""
