"""`make bench-metadata`: what one metadata change costs at 1,000 / 10,000 / 100,000 partitions, before
(every broker re-reads the full image) and after the metadata log (every broker reads a delta), in the same run.

Runs the control plane in this process on a fresh SQLite database in a temporary directory (migrated
here), with 3 registered brokers and topics of 10 partitions, RF 3 (rows written in bulk, then recorded as
one change). Per size it measures, each as the median of `BENCH_METADATA_REPEATS` (5) changes:

- **single leader change** (partition 0 of one topic moves to another in-sync replica):
  - before: building the full image (`metadata.image()` + JSON, what `GET /metadata` answers each broker) and
    its bytes; a broker parsing it (`brokerd.metadata.cluster.parse_image`);
  - after: the change's transaction (with its log record), the delta's body (`changelog.catch_up`, built
    once, served to all 3 brokers from the cache) and its bytes, and a broker applying it
    (`brokerd.metadata.delta`); control-plane CPU per change (process time of change + body);
- **broker failure**: fencing the broker that leads a third of the partitions, as the controller does
  (`on_broker_gone` + bump, one transaction): its duration, the delta's bytes and a broker applying it,
  against the old way (one conditional UPDATE per partition, `election.apply_change`) and the full image;
- the process's RSS after the largest size (control plane and one broker image in one process).

`BENCH_METADATA_MODE=cluster` runs `bench.metadata_cluster` instead: the same questions end to end, over a real
3-broker cluster and control plane (HTTP, Kafka protocol, SIGKILL of a broker, an acks=all producer, each
process's RSS).

Environment: BENCH_METADATA_SIZES (1000,10000,100000), BENCH_METADATA_REPEATS (5),
BENCH_METADATA_OLD_WAY_MAX (10000: the old per-partition failover is not measured above it).
"""

import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SIZES = [int(n) for n in os.environ.get("BENCH_METADATA_SIZES", "1000,10000,100000").split(",")]
REPEATS = int(os.environ.get("BENCH_METADATA_REPEATS", "5"))
PARTITIONS_PER_TOPIC = 10
OLD_WAY_MAX_PARTITIONS = int(os.environ.get("BENCH_METADATA_OLD_WAY_MAX", "10000"))
"""The one-UPDATE-per-partition failover is measured up to this size only (it takes minutes beyond)."""


def setup_django(var_dir: str) -> None:
    os.environ["STROM_VAR_DIR"] = var_dir
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


def timed(fn):
    """(result, wall seconds, process CPU seconds)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def grow_to(total: int) -> None:
    """Add topics of 10 partitions (RF 3, leaders spread over brokers 1-3) until there are `total`
    partitions, in one transaction recorded as one change."""
    from django.db import transaction

    from controlplane.cluster import metadata
    from controlplane.topics.models import Partition, Topic

    have = Partition.objects.count()
    with transaction.atomic():
        state = metadata.locked_state()
        start = Topic.objects.count()
        topics = Topic.objects.bulk_create(Topic(name=f"t{start + i:06d}")
                                           for i in range((total - have) // PARTITIONS_PER_TOPIC))
        rows = []
        for t, topic in enumerate(topics):
            for p in range(PARTITIONS_PER_TOPIC):
                first = (start + t + p) % 3
                replicas = [1 + (first + k) % 3 for k in range(3)]
                rows.append(Partition(topic=topic, partition=p, replicas=replicas, isr=replicas, leader=replicas[0]))
        Partition.objects.bulk_create(rows, batch_size=5000)
        metadata.bump(state)


def full_image() -> bytes:
    """What `GET /metadata` answers and a snapshot holds."""
    from controlplane.cluster import metadata

    return metadata.image_json().encode()


def swing_one_leader(topic: str) -> None:
    """Move the leadership of partition 0 of `topic` to another in-sync replica: one change."""
    from django.db import transaction

    from controlplane.cluster import metadata
    from controlplane.controller import election
    from controlplane.topics.models import Partition

    with transaction.atomic():
        state = metadata.locked_state()
        row = Partition.objects.get(topic__name=topic, partition=0)
        target = row.replicas[1] if row.leader == row.replicas[0] else row.replicas[0]
        election.apply_changes([(row, election.PartitionState(target, tuple(row.isr)))])
        metadata.bump(state)


def fence(broker_id: int, batched: bool) -> None:
    from django.db import transaction

    from controlplane.cluster import metadata
    from controlplane.cluster.models import Broker, BrokerState
    from controlplane.controller import election
    from controlplane.topics.models import Partition

    with transaction.atomic():
        state = metadata.locked_state()
        Broker.objects.filter(broker_id=broker_id).update(state=BrokerState.FENCED)
        live = election.live_broker_ids()
        if batched:
            election.on_broker_gone(broker_id, live)
        else:  # the way before this issue: one conditional UPDATE per partition
            for p in Partition.objects.select_related("topic"):
                if broker_id in p.replicas:
                    election.apply_change(p, election.choose_after_fencing(
                        p.replicas, p.isr, p.leader, broker_id, live, election.unclean_allowed(p.topic)))
        metadata.bump(state)


def revive(broker_id: int) -> None:
    """Broker back: registered, in every ISR again, leading its preferred partitions (for the next round)."""
    from django.db import transaction
    from django.db.models import F

    from controlplane.cluster import metadata, services
    from controlplane.controller.election import elect_leaders
    from controlplane.topics.models import Partition

    services.register_broker(broker_id, f"PLAINTEXT://127.0.0.1:{9091 + broker_id}", None, [])
    with transaction.atomic():
        state = metadata.locked_state()
        Partition.objects.all().update(isr=F("replicas"))
        metadata.bump(state)
    elect_leaders("preferred", None)


def median(values: list[float]) -> float:
    return statistics.median(values)


def measure(size: int) -> dict:
    from brokerd.metadata.cluster import apply_body, parse_image
    from controlplane.cluster import changelog, metadata
    from controlplane.topics.models import Partition

    grow_to(size)
    figures: dict[str, float] = {"partitions": Partition.objects.count()}
    before_image, image_s, _ = timed(full_image)
    figures["image_bytes"] = len(before_image)
    figures["image_build_ms"] = image_s * 1000
    broker_image, parse_s, _ = timed(lambda: parse_image(json.loads(before_image)))
    figures["image_parse_ms"] = parse_s * 1000

    change_ms, body_ms, cpu_ms, delta_bytes, apply_ms = [], [], [], [], []
    for r in range(REPEATS):
        since = metadata.current_version()
        _, change_s, change_cpu = timed(lambda r=r: swing_one_leader(f"t{r:06d}"))
        body, body_s, body_cpu = timed(lambda since=since: changelog.catch_up(since))
        for _ in range(2):  # the other two brokers: served from the cache
            assert changelog.catch_up(since) is body
        broker_image, a_s, _ = timed(lambda b=broker_image, body=body: apply_body(b, json.loads(body)))
        change_ms.append(change_s * 1000)
        body_ms.append(body_s * 1000)
        cpu_ms.append((change_cpu + body_cpu) * 1000)
        delta_bytes.append(len(body))
        apply_ms.append(a_s * 1000)
    assert broker_image == parse_image(metadata.image()), "the broker's image drifted from the control plane's"
    figures.update(change_ms=median(change_ms), delta_body_ms=median(body_ms), cpu_per_change_ms=median(cpu_ms),
                   delta_bytes=median(delta_bytes), delta_apply_ms=median(apply_ms))

    leader_counts = {b: Partition.objects.filter(leader=b).count() for b in (1, 2, 3)}
    victim = max(leader_counts, key=leader_counts.get)
    figures["failover_leaderships"] = leader_counts[victim]
    for batched in (False, True) if size <= OLD_WAY_MAX_PARTITIONS else (True,):
        since = metadata.current_version()
        _, fence_s, fence_cpu = timed(lambda batched=batched: fence(victim, batched))
        body = changelog.catch_up(since)
        key = "batched" if batched else "per_partition"
        figures[f"failover_{key}_ms"] = fence_s * 1000
        if batched:
            broker_image, a_s, _ = timed(lambda b=broker_image, body=body: apply_body(b, json.loads(body)))
            figures["failover_delta_bytes"] = len(body)
            figures["failover_delta_apply_ms"] = a_s * 1000
            _, image_s, _ = timed(full_image)
            figures["failover_image_build_ms"] = image_s * 1000
        revive(victim)
        broker_image = parse_image(metadata.image())
    return figures


ROWS = [
    ("partitions", "partitions", "{:.0f}"),
    ("full image: bytes per broker per change (before)", "image_bytes", "{:,.0f}"),
    ("full image: build ms (before, per change)", "image_build_ms", "{:.1f}"),
    ("full image: broker parse ms (before)", "image_parse_ms", "{:.1f}"),
    ("one leader change: transaction ms", "change_ms", "{:.2f}"),
    ("one leader change: delta bytes per broker (after)", "delta_bytes", "{:,.0f}"),
    ("one leader change: delta body ms (once for 3 brokers)", "delta_body_ms", "{:.2f}"),
    ("one leader change: broker apply ms (after)", "delta_apply_ms", "{:.2f}"),
    ("control-plane CPU ms per change (after)", "cpu_per_change_ms", "{:.2f}"),
    ("broker failure: leaderships moved", "failover_leaderships", "{:,.0f}"),
    ("broker failure: election ms, one UPDATE per partition (before)", "failover_per_partition_ms", "{:.0f}"),
    ("broker failure: election ms, batched (after)", "failover_batched_ms", "{:.0f}"),
    ("broker failure: delta bytes per broker (after)", "failover_delta_bytes", "{:,.0f}"),
    ("broker failure: broker apply ms (after)", "failover_delta_apply_ms", "{:.0f}"),
    ("broker failure: full image build ms (before)", "failover_image_build_ms", "{:.0f}"),
]


def main() -> int:
    sys.path[:0] = [str(REPO_ROOT), str(REPO_ROOT / "platform")]
    if os.environ.get("BENCH_METADATA_MODE") == "cluster":
        from bench import metadata_cluster

        return metadata_cluster.main()
    with tempfile.TemporaryDirectory(prefix="strom-bench-metadata-") as var_dir:
        setup_django(var_dir)
        from controlplane.cluster import services

        for broker_id in (1, 2, 3):
            services.register_broker(broker_id, f"PLAINTEXT://127.0.0.1:{9091 + broker_id}", None, [])
        results = []
        for size in SIZES:
            results.append(measure(size))
            print(f"measured {size} partitions", file=sys.stderr, flush=True)
    print(f"\nmake bench-metadata (SQLite, one process; medians of {REPEATS}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    width = max(len(label) for label, _, _ in ROWS)
    for label, key, fmt in ROWS:
        print(f"{label:<{width}}  " + "  ".join(f"{fmt.format(r[key]) if key in r else '-':>12}" for r in results))
    print(f"max RSS of this process (control plane + one broker image): "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
