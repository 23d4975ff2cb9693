"""Values in Confluent's wire format, as its Avro serializers write them, for tests of readers."""

import io
import struct

import fastavro


def confluent_avro(record: dict, schema: dict, schema_id: int) -> bytes:
    """Magic byte 0, the schema id (4 bytes, big-endian), then the record in Avro's binary encoding."""
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(schema), record)
    return struct.pack(">bI", 0, schema_id) + body.getvalue()
