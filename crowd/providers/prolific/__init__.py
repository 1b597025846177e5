"""Prolific: the REST client (``api``), its webhooks and the provider."""
