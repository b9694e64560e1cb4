"""Logs and metrics: what an operator sees of the service."""
