"""Kafka's own rules that every Strom component must apply identically.

A leaf package: pure functions and tables, no I/O, no framework and no other Strom import, so that the
broker (`brokerd`) and the metadata store (`controlplane`) validate topic names and configs the same way.
"""
