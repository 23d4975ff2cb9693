"""Kafka record formats (sans-IO). `batch` is the record batch v2 codec; see its module docstring."""
