"""Shared test helpers: real broker subprocesses, polling with deadlines."""
