"""Read a `__consumer_offsets` partition's local log back into (key, value) records, for
`GroupCoordinator.load`.

Batches are decoded here (compressed ones too, through `brokerd.records.batch`): loading is the one place
where the broker must look inside every record of this topic. Control batches and keyless records (which
this topic never holds) are skipped. The read proceeds in chunks of `buffer_size` bytes
(`offsets.load.buffer.size`) and yields to the event loop between chunks.
"""

import asyncio

from brokerd.errors import CorruptRecordError
from brokerd.groups.coordinator import Record
from brokerd.records.batch import iter_batches, iter_records, whole_batches_length
from brokerd.storage import Log, read_bytes


async def read_records(log: Log, end_offset: int, buffer_size: int) -> list[Record]:
    """The records at offsets [log start, `end_offset`) in log order."""
    records: list[Record] = []
    offset = log.log_start_offset
    while offset < end_offset:
        region = log.read(offset, buffer_size, end_offset)
        if not region.length:
            break
        data = memoryview(read_bytes(region))
        whole = whole_batches_length(data)
        if not whole:
            raise CorruptRecordError(f"{log.topic}-{log.partition}: no whole batch at offset {offset}")
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
