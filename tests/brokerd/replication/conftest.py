"""The partition tests' fixtures (partitions over real logs, a recording listener), shared here."""

from tests.brokerd.partition.conftest import listener, make_partition

__all__ = ("listener", "make_partition")
