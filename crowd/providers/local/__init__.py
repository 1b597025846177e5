"""The local crowd: crowdqa itself is the platform (a DB-backed provider, so Django is used here)."""
