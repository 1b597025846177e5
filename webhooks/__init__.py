"""Signed outbound webhooks: researchers' endpoints, the events sent to them and every delivery attempt."""
