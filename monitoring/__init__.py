"""Burrow-style consumer-lag evaluation and alerting webhooks (arrives with its own issue)."""
