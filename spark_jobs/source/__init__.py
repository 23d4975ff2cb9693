"""The `strom` data source: Kafka topics (Strom's or any Kafka cluster's) read and written by Spark.

`register(spark)` makes `spark.read.format("strom")`, `spark.readStream.format("strom")`,
`df.write.format("strom")` and `df.writeStream.format("strom")` available in that session.
"""


def register(spark) -> None:
    """Register the `strom` format in `spark`'s session."""
    from spark_jobs.source.datasource import StromDataSource

    spark.dataSource.register(StromDataSource)
