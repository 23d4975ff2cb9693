"""Crash-test creator: creates logs in batches forever, reporting each batch once `create_logs` returned.

Usage: python create_writer.py DATA_DIR SEED FIRST_BATCH. Batch k (from FIRST_BATCH on) is `k % 40 + 1`
partitions of topic `t<k>` whose id is `topic_id(k)`; after `create_logs` returns it prints `created <k>`:
from then on those logs must survive a crash. The parent SIGKILLs it at a random moment.
"""

import sys
import uuid
from pathlib import Path

from brokerd.clock import SystemClock
from brokerd.storage import LogManager, NewLog


def topic_id(batch: int) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_OID, f"t{batch}")


def batch_size(batch: int) -> int:
    return batch % 40 + 1


def main() -> None:
    data_dir, first = Path(sys.argv[1]), int(sys.argv[3])
    manager = LogManager([data_dir], {}, SystemClock())
    manager.startup()
    batch = first
    while True:
        manager.create_logs([NewLog(f"t{batch}", p, topic_id(batch)) for p in range(batch_size(batch))])
        print(f"created {batch}", flush=True)
        batch += 1


if __name__ == "__main__":
    main()
