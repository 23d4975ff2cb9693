"""What a full garbage collection holds a broker's loop for at scale once it has served a while (issue 17: "full
garbage collections at 100k").

Broker 1 of 3 with `BENCH_IDLE_PARTITIONS` partitions (default 100,000; as `bench.idle_loop_holds`): the replicas are
built and frozen out of collection as `Broker.start` does; then what a broker builds after its start and keeps —
both followers' fetch sessions of every led partition, and the all-topics Metadata answer's topic entries and their
encodings (a client's first request) — and a run of metadata changes' worth of short-lived objects. Printed: the
objects a full collection walks (tracked, not frozen) and its CPU ms, median of 3, then the same after the broker's
garbage-collection policy had its say (`brokerd.gc_policy`, when present), which is what every later full collection
costs.

    .venv/bin/python -m bench.full_collection
"""

import asyncio
import gc
import importlib
import os
import statistics
import time
import types

from kio.index import load_request_schema, load_response_schema

from bench.idle_loop_holds import _open_sessions, _replica_manager
from bench.replica_roles import _image
from brokerd.protocol.api_keys import ApiKey
from brokerd.protocol.responses import response_schema
from brokerd.server.handlers import topic_metadata

METADATA_VERSION = 12


def _first_all_topics_answer(image) -> None:
    context = types.SimpleNamespace(response=response_schema(load_response_schema(ApiKey.METADATA, METADATA_VERSION)),
                                    version=METADATA_VERSION,
                                    services=types.SimpleNamespace(metadata=types.SimpleNamespace(image=image)))
    request = response_schema(load_request_schema(ApiKey.METADATA, METADATA_VERSION)).MetadataRequest(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    asyncio.run(topic_metadata.handle(request, context))


def _full_collection_ms() -> float:
    times = []
    for _ in range(3):
        started = time.process_time()
        gc.collect()
        times.append(1000 * (time.process_time() - started))
    return statistics.median(times)


def main() -> None:
    partitions = int(os.environ.get("BENCH_IDLE_PARTITIONS", "100000"))
    image = _image(partitions, epoch=1)
    replicas = _replica_manager(image, 30_000)
    gc.collect()
    gc.freeze()  # as the broker does once its replicas exist
    _open_sessions(replicas)  # opened by the followers once this broker leads
    _first_all_topics_answer(image)
    print(f"{partitions:,} partitions ({sum(p.is_leader for p in replicas.partitions()):,} led); "
          f"frozen at start: {gc.get_freeze_count():,} objects")
    print(f"a full collection: {len(gc.get_objects()):,} objects walked, {_full_collection_ms():.0f} ms CPU")
    try:
        policy = importlib.import_module("brokerd.gc_policy")
    except ModuleNotFoundError:
        return
    loop = asyncio.new_event_loop()
    uninstall = policy.install(loop)
    try:
        gc.collect()  # the collection that finds the long-lived objects: the policy freezes them
        loop.run_until_complete(asyncio.sleep(0))
    finally:
        uninstall()
        loop.close()
    print(f"after the policy: {len(gc.get_objects()):,} objects walked, {_full_collection_ms():.0f} ms CPU")


if __name__ == "__main__":
    main()
