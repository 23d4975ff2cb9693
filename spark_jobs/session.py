"""The SparkSession every Strom job runs in: local by default, a Spark standalone cluster when asked.

`STROM_SPARK_MASTER` picks the master (`local[*]` by default; `spark://host:7077` for a standalone
cluster). The executors' Python is this interpreter (`PYSPARK_PYTHON`, unless already set), so it must
exist at the same path on every worker with pyspark, pyarrow and confluent-kafka installed. On a cluster
master, this package is also shipped to the executors as a zip (`SparkContext.addPyFile`) before the
`strom` source is registered, so workers need no copy of Strom. Executors must reach the Kafka brokers
and the driver (`STROM_SPARK_DRIVER_HOST`, default 127.0.0.1 — set it to an address the workers can
reach), and the output location must be a path they share with the driver (or the driver's own machine,
for a cluster on it).

Never create a session at import time or in a forking parent (Celery): one per job process.
"""

import os
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

MASTER_ENV = "STROM_SPARK_MASTER"
DRIVER_HOST_ENV = "STROM_SPARK_DRIVER_HOST"
DEFAULT_MASTER = "local[*]"

DEFAULTS = {
    "spark.ui.enabled": "false",  # no 4040.. port hunting; progress comes from the status tracker
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",  # INT96 overflows in pyarrow readers
    "spark.sql.sources.partitionOverwriteMode": "dynamic",  # a run replaces only its own partitions
    "spark.driver.memory": "1g",
}
CLUSTER_DEFAULTS = {
    "spark.executor.memory": "512m",  # Spark's 1g exceeds small workers' memory: the app would wait forever
}


def spark_master() -> str:
    return os.environ.get(MASTER_ENV, "").strip() or DEFAULT_MASTER


def create_session(app_name: str, conf: Mapping[str, str] | None = None, master: str | None = None):
    """A SparkSession on `master` (default `spark_master()`) with the `strom` format registered; `conf`
    overrides the defaults above (e.g. `spark.cores.max`, `spark.executor.memory`)."""
    from pyspark.sql import SparkSession

    from spark_jobs.source import register

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    master = master or spark_master()
    host = os.environ.get(DRIVER_HOST_ENV, "").strip() or "127.0.0.1"
    os.environ.setdefault("SPARK_LOCAL_IP", host)
    settings = {**DEFAULTS, "spark.driver.host": host, "spark.driver.bindAddress": host}
    if not master.startswith("local"):
        settings.update(CLUSTER_DEFAULTS)
    settings.update(conf or {})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if not master.startswith("local"):
        spark.sparkContext.addPyFile(str(package_zip()))
    register(spark)
    return spark


def package_zip() -> Path:
    """This package's sources as a zip importable from `sys.path` (for executors without Strom)."""
    root = Path(__file__).resolve().parent
    target = Path(tempfile.mkdtemp(prefix="strom-spark-")) / "spark_jobs.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*.py")):
            archive.write(path, Path(root.name) / path.relative_to(root))
    return target
