"""Models of the `exports` app (none yet: its logic lives in plain modules)."""
