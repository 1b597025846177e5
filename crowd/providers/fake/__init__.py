"""The in-memory fake provider the tests and the demo use."""
