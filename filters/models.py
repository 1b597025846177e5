"""Models of the `filters` app (none yet: its logic lives in plain modules)."""
