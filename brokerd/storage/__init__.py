"""The broker's on-disk commit log (Kafka's storage layer, no network code).

Layers, bottom up: `index` (`offset_index`, `time_index`) -> `segment` -> `log` -> `log_manager`;
`cleaner` compacts, `checkpoints` and `leader_epoch` persist small state, `validator` checks appends,
`log_dir` funnels I/O errors. Public API::

    lm = LogManager(log_dirs=[...], cluster_defaults=broker_defaults(props), clock=SystemClock())
    lm.startup(); lm.start()
    log = lm.get_or_create_log("orders", 0, {"retention.ms": "3600000"})
    logs = lm.create_logs([NewLog("orders", 1, topic_id), ...])   # a batch, durable on return
    info = log.append_as_leader(bytearray(batches), leader_epoch=0)     # -> AppendInfo
    region = log.read(offset, max_bytes, max_offset_exclusive=high_watermark)  # -> FileRegion
    await loop.sendfile(transport, region.file, region.position, region.length)
    lm.shutdown()

Concurrency: see `log` and `log_manager` (event-loop thread + one maintenance thread).
"""

from brokerd.storage.config import LogConfig
from brokerd.storage.log import AppendInfo, FileRegion, Log, read_bytes
from brokerd.storage.log_manager import LogManager, NewLog

__all__ = ["AppendInfo", "FileRegion", "Log", "LogConfig", "LogManager", "NewLog", "read_bytes"]
