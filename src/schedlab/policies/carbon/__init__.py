"""Carbon- and energy-aware scheduling policies (they plan against the run's carbon series)."""
