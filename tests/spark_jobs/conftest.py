"""One local SparkSession for every spark_jobs test (a session costs 5-15 s to start on 2 cores), stopped
at the end of the run; the `strom` format is registered in it."""

import pytest


@pytest.fixture(scope="session")
def spark():
    from spark_jobs.session import create_session

    session = create_session("strom-tests", {"spark.sql.shuffle.partitions": "2"}, master="local[2]")
    yield session
    session.stop()
