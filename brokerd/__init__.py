"""Strom's broker daemon: Kafka wire protocol, commit logs, replication, group coordination.

Plain asyncio and the standard library plus a few codec libraries; never Django, Celery, Dash or Spark.
"""
