"""Models of the `distractors` app (none yet: its logic lives in plain modules)."""
