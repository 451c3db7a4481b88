"""Plain columnar data decoded from profiles: no I/O, no analysis."""
