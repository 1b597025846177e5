"""Models of the `evaluation` app (none yet: its logic lives in plain modules)."""
