"""Strom on Spark: the `strom` data source (`source/`) and the lag and retention reports, each a command
`python -m spark_jobs.<report>` that the control plane launches as a subprocess.

Imports nothing else of Strom; a job runs with `local[*]` unless `STROM_SPARK_MASTER` names a cluster.
`spark_jobs.results` reads the reports' outputs without Spark.
"""
