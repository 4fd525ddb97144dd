"""Statistics over raw samples, computed at report time (pure functions, no I/O)."""
