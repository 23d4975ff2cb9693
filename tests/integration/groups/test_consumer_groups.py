"""Consumer groups with the real clients against a standalone broker, every member a subprocess:
3 members over 6 partitions split them exactly (every assignor), consume every record exactly once when
nothing fails, and a SIGKILLed member's partitions move to the survivors within the session timeout (the
rebalance time is printed: `pytest -s`)."""

import time
from collections import Counter

import pytest

from tests.integration.groups.group_consumers import ConsumerGroup, ProducerThread, create_topic, produce
from tests.support.polling import wait_until

PARTITIONS = 6
MEMBERS = 3
SESSION_MS = 6_000
RECORDS = 600


@pytest.mark.parametrize(("client", "assignor"), [
    ("kafka-python", "range"),
    ("confluent-kafka", "range"),
    ("aiokafka", "range"),
    ("kafka-python", "roundrobin"),
    ("kafka-python", "cooperative-sticky"),
    ("confluent-kafka", "roundrobin"),
    ("confluent-kafka", "cooperative-sticky"),
    ("aiokafka", "roundrobin"),
    ("aiokafka", "sticky"),
])
def test_three_members_split_six_partitions_and_consume_each_record_once(broker, topic_name, tmp_path, client,
                                                                         assignor):
    create_topic(broker.bootstrap, topic_name, PARTITIONS)
    with ConsumerGroup(client, broker.bootstrap, f"g-{topic_name}", topic_name, assignor, SESSION_MS, MEMBERS,
                       tmp_path) as group:
        assignment = group.wait_for_full_assignment(PARTITIONS)
        assert sorted(len(a) for a in assignment.values()) == [2, 2, 2]
        produced = produce(broker.bootstrap, topic_name, PARTITIONS, RECORDS)
        wait_until(lambda: len(group.received()) >= RECORDS, 60, message=f"{RECORDS} records consumed")
        consumed = Counter((r.partition, r.offset, r.value) for r in group.received())
        assert consumed == Counter(produced), "every record exactly once"
        owner = {p: name for name, partitions in group.assignments().items() for p in partitions}
        for member in group.members:
            assert {r.partition for r in member.records} <= {p for p, n in owner.items() if n == member.name}


@pytest.mark.slow
def test_killed_member_partitions_move_to_the_survivors_within_the_session_timeout(broker, topic_name, tmp_path):
    create_topic(broker.bootstrap, topic_name, PARTITIONS)
    producer = ProducerThread(broker.bootstrap, topic_name, PARTITIONS).start()
    try:
        with ConsumerGroup("confluent-kafka", broker.bootstrap, f"g-{topic_name}", topic_name, "range", SESSION_MS,
                           MEMBERS, tmp_path) as group:
            group.wait_for_full_assignment(PARTITIONS)
            wait_until(lambda: all(m.records for m in group.members), 30, message="every member consuming")
            victim, survivors = group.members[0], group.members[1:]
            orphaned = set(victim.assignment or ())
            killed_at = time.monotonic()
            victim.kill()

            def taken_over() -> float | None:
                """When survivors had consumed from every orphaned partition (None until then)."""
                firsts = {}
                for member in survivors:
                    with member.lock:
                        for record in member.records:
                            if record.partition in orphaned and record.at > killed_at:
                                firsts[record.partition] = min(firsts.get(record.partition, record.at), record.at)
                return max(firsts.values()) if set(firsts) == orphaned else None

            consuming_at = wait_until(taken_over, SESSION_MS / 1000 + 30, interval_s=0.01,
                                      message=f"survivors to consume partitions {sorted(orphaned)}")
            assignment = group.wait_for_full_assignment(PARTITIONS, survivors)
            assigned_at = max(m.assigned_at for m in survivors)
            print(f"\nconsumer SIGKILL -> partitions {sorted(orphaned)} reassigned to {assignment} after "
                  f"{assigned_at - killed_at:.2f}s, consumed by the survivors after {consuming_at - killed_at:.2f}s "
                  f"(session.timeout.ms={SESSION_MS})")
            # The coordinator can only notice a silent member by its session expiring, and must not take much
            # longer than that: one heartbeat interval to tell the survivors, one join/sync round trip.
            assert SESSION_MS / 1000 * 0.9 <= assigned_at - killed_at <= SESSION_MS / 1000 + 5
            producer.stop()
            assert not producer.errors, producer.errors[:5]
            wait_until(lambda: {(p, o) for p, o, _ in producer.acked} <= {(r.partition, r.offset)
                                                                           for r in group.received()},
                       30, message="every acknowledged record consumed")
    finally:
        producer.stop()


def test_a_restarted_static_member_gets_its_partitions_back_without_a_rebalance(broker, topic_name, tmp_path):
    create_topic(broker.bootstrap, topic_name, PARTITIONS)
    with ConsumerGroup("confluent-kafka", broker.bootstrap, f"g-{topic_name}", topic_name, "range", SESSION_MS, 2,
                       tmp_path, static=True) as group:
        assignment = group.wait_for_full_assignment(PARTITIONS)
        other = group.members[1]
        callbacks = list(other.rebalance_callbacks)
        restarted = group.restart(0, static=True)  # closes without LeaveGroup (KIP-345), rejoins by instance id
        wait_until(lambda: restarted.assignment == assignment[restarted.name], 30,
                   message="the restarted member's old partitions")
        assert restarted.rebalance_callbacks == ["assign"]
        assert other.rebalance_callbacks == callbacks, "the other member went through a rebalance"
