"""The rows of the `strom` source: Spark's Kafka source schema, as a Spark type and as the Arrow schema that
`read()` must yield exactly (Spark 4.3 compares every RecordBatch's schema with `equals`).

Columns: key binary, value binary, topic string, partition int, offset long, timestamp timestamp (UTC,
microseconds in Arrow), timestampType int (-1 none, 0 CreateTime, 1 LogAppendTime), and, only with
`includeHeaders=true`, headers array<struct<key string, value binary>>.
"""

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

HEADER_TYPE = StructType([StructField("key", StringType()), StructField("value", BinaryType())])


def kafka_schema(include_headers: bool) -> StructType:
    """Spark's Kafka source schema (a StructType: `offset` and `partition` are SQL keywords in DDL)."""
    schema = StructType([
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ])
    if include_headers:
        schema = schema.add("headers", ArrayType(HEADER_TYPE))
    return schema


def arrow_schema(schema: StructType):
    """The Arrow schema Spark expects batches of `schema` in (timestamps as microseconds, UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")
