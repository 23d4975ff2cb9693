"""PySpark report jobs scheduled by the control plane's Celery beat (arrive with their own issue).

Imports nothing else of Strom; a job runs with `local[*]` unless pointed at a Spark cluster.
"""
