"""Read a `__consumer_offsets` partition back into (key, value) records, for `GroupCoordinator.load`, through
its `Partition` (up to the log end offset, as Kafka's loading reads).

Batches are decoded here (compressed ones too, through `brokerd.records.batch`): loading is the one place
where the broker must look inside every record of this topic. Control batches and keyless records (which
this topic never holds) are skipped. The read proceeds in chunks of `buffer_size` bytes
(`offsets.load.buffer.size`) and yields to the event loop between chunks.
"""

import asyncio

from brokerd.groups.persistence import Record
from brokerd.records.batch import iter_batches, iter_records, whole_batches_length
from brokerd.records.errors import CorruptRecordError
from brokerd.replication.partition import Partition
from brokerd.storage import read_bytes
from brokerd.types import Offset


async def read_records(partition: Partition, end_offset: Offset, buffer_size: int) -> list[Record]:
    """The records at offsets [log start, `end_offset`) in log order."""
    records: list[Record] = []
    offset = partition.log_start_offset
    while offset < end_offset:
        region = partition.read(offset, buffer_size, up_to_log_end=True)
        if region is None:
            break
        data = memoryview(read_bytes(region))
        whole = whole_batches_length(data)
        if not whole:
            raise CorruptRecordError(f"{partition.key}: no whole batch at offset {offset}")
        for position, header in iter_batches(data[:whole]):
            if header.next_offset <= offset:
                continue
            if not header.is_control:
                for record in iter_records(data[position:position + header.size], header):
                    if header.base_offset + record.offset_delta >= offset and record.key is not None:
                        records.append((record.key, record.value))
            offset = header.next_offset
        await asyncio.sleep(0)
    return records
