"""The control plane as a Kafka admin client (confluent-kafka's AdminClient over librdkafka) for consumer groups.

Group state lives in the brokers (their coordinators and `__consumer_offsets`), not in the metadata store, so
this module is where the control plane opens Kafka connections, as `kafka-consumer-groups` would. It never
imports brokerd. Every call waits at most `timeout_s` (Kafka's tool defaults to `--timeout 5000` ms), and every
failure becomes a `KafkaApiError`: 404 GROUP_ID_NOT_FOUND, 409 NON_EMPTY_GROUP (members are active), 503
COORDINATOR_NOT_AVAILABLE (a coordinator is loading or moving) or BROKER_NOT_AVAILABLE (the cluster cannot be
reached), 502 for any other error a broker answers.

Offsets are Kafka offsets (int), timestamps milliseconds since the epoch.
"""

import concurrent.futures
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from django.conf import settings

from controlplane.cluster.models import Broker, BrokerState
from controlplane.core.errors import KafkaApiError

__all__ = ("EARLIEST", "LATEST", "REQUEST_TIMEOUT_S", "GroupDescription", "GroupListing", "KafkaGroupAdmin",
           "Member", "TopicPartition", "bootstrap_servers", "connect")

REQUEST_TIMEOUT_S = 5.0
EARLIEST = "earliest"  # list_offsets query: the log start offset
LATEST = "latest"  # list_offsets query: the log end offset (high watermark)
CLIENT_ID = "strom-controlplane"

# Kafka's group state names (as kafka-consumer-groups prints them).
_STATE_NAMES = {
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.EMPTY: "Empty",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.UNKNOWN: "Unknown",
}
_COORDINATOR_ERRORS = frozenset({KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.NOT_COORDINATOR,
                                 KafkaError.COORDINATOR_LOAD_IN_PROGRESS})
# librdkafka's local errors meaning "no answer": from the cluster, or (if it answers Metadata) from a coordinator.
_NO_ANSWER_ERRORS = frozenset({KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN,
                               KafkaError._RESOLVE, KafkaError._WAIT_COORD})
_UNKNOWN_PARTITION_ERRORS = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION,
                                       KafkaError._UNKNOWN_TOPIC})
# A commit refused because the group has (or just got) members.
_ACTIVE_GROUP_ERRORS = frozenset({KafkaError.UNKNOWN_MEMBER_ID, KafkaError.ILLEGAL_GENERATION,
                                  KafkaError.REBALANCE_IN_PROGRESS, KafkaError.NON_EMPTY_GROUP})

_librdkafka_log = logging.getLogger("controlplane.groups.librdkafka")


@dataclass(frozen=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    protocol_type: str  # "consumer", or "" for a simple group (committed offsets, no membership)


@dataclass(frozen=True)
class Member:
    member_id: str
    client_id: str
    host: str
    group_instance_id: str | None
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class GroupDescription:
    """A group as DescribeGroups reports it. A group the coordinator does not know is "Dead" with no members."""

    group_id: str
    state: str  # Kafka's state name: Stable, PreparingRebalance, CompletingRebalance, Empty, Dead, Unknown
    protocol_type: str
    assignor: str  # the selected assignment strategy ("range", "cooperative-sticky", …), "" if none
    coordinator_id: int | None
    members: tuple[Member, ...]


def bootstrap_servers() -> str:
    """`STROM_BOOTSTRAP_SERVERS` if set, else the first listener of every running broker in the metadata store."""
    if settings.STROM_BOOTSTRAP_SERVERS:
        return settings.STROM_BOOTSTRAP_SERVERS
    addresses = []
    for broker in Broker.objects.filter(state=BrokerState.RUNNING):
        _, host, port = broker.endpoints[0]
        host = host or "localhost"
        addresses.append(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    if not addresses:
        raise KafkaApiError("BROKER_NOT_AVAILABLE", "No broker is running (none is registered as running and "
                                                    "STROM_BOOTSTRAP_SERVERS is not set).", 503)
    return ",".join(addresses)


def connect() -> "KafkaGroupAdmin":
    """An admin client for the cluster this control plane manages."""
    return KafkaGroupAdmin(bootstrap_servers())


class KafkaGroupAdmin:
    """Consumer-group admin operations over the Kafka protocol. One instance per request: cheap to create,
    holds a librdkafka handle (background threads) until garbage-collected."""

    def __init__(self, bootstrap: str, timeout_s: float = REQUEST_TIMEOUT_S):
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self._admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": CLIENT_ID,
                                   "socket.timeout.ms": int(timeout_s * 1000)}, logger=_librdkafka_log)

    def list_groups(self) -> list[GroupListing]:
        result = self._wait(self._admin.list_consumer_groups(request_timeout=self.timeout_s), "list groups")
        if result.errors:
            raise self._error(result.errors[0], "list groups")
        return [GroupListing(g.group_id, "" if g.is_simple_consumer_group else "consumer") for g in result.valid]

    def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
        group_ids = list(dict.fromkeys(group_ids))
        if not group_ids:
            return {}
        futures = self._admin.describe_consumer_groups(group_ids, request_timeout=self.timeout_s)
        descriptions = {}
        for group_id, future in futures.items():
            try:
                description = self._wait(future, f"describe group '{group_id}'", group_id)
            except KafkaApiError as e:
                if e.error != "GROUP_ID_NOT_FOUND":
                    raise
                descriptions[group_id] = GroupDescription(group_id, "Dead", "", "", None, ())
                continue
            descriptions[group_id] = GroupDescription(
                group_id=group_id,
                state=_STATE_NAMES.get(description.state, "Unknown"),
                protocol_type="" if description.is_simple_consumer_group else "consumer",
                assignor=description.partition_assignor or "",
                coordinator_id=description.coordinator.id if description.coordinator else None,
                members=tuple(
                    Member(m.member_id, m.client_id, m.host, m.group_instance_id,
                           tuple(sorted(TopicPartition(tp.topic, tp.partition)
                                        for tp in m.assignment.topic_partitions)))
                    for m in description.members),
            )
        return descriptions

    def committed_offsets(self, group_id: str) -> dict[TopicPartition, int]:
        """The group's committed offsets (OffsetFetch for all partitions); partitions without one are absent."""
        futures = self._admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group_id)],
                                                          request_timeout=self.timeout_s)
        result = self._wait(futures[group_id], f"fetch the offsets of group '{group_id}'", group_id)
        offsets = {}
        for tp in result.topic_partitions:
            if tp.error is not None:
                raise self._error(tp.error, f"fetch the offset of {tp.topic}-{tp.partition}")
            if tp.offset >= 0:
                offsets[TopicPartition(tp.topic, tp.partition)] = tp.offset
        return offsets

    def alter_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit `offsets` for the group (OffsetCommit outside any generation: the group must be inactive)."""
        request = ConsumerGroupTopicPartitions(
            group_id, [KafkaTopicPartition(tp.topic, tp.partition, offset) for tp, offset in offsets.items()])
        futures = self._admin.alter_consumer_group_offsets([request], request_timeout=self.timeout_s)
        result = self._wait(futures[group_id], f"commit offsets for group '{group_id}'", group_id)
        for tp in result.topic_partitions:
            if tp.error is not None:
                raise self._error(tp.error, f"commit the offset of {tp.topic}-{tp.partition}", group_id)

    def delete_group(self, group_id: str) -> None:
        futures = self._admin.delete_consumer_groups([group_id], request_timeout=self.timeout_s)
        self._wait(futures[group_id], f"delete group '{group_id}'", group_id)

    def list_offsets(self, partitions: Iterable[TopicPartition], query: str | int
                     ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, str]]:
        """ListOffsets for `query` (EARLIEST, LATEST, or a timestamp in ms: the first offset whose record
        timestamp is at or after it, -1 if there is none). Returns (offsets, errors): a partition the brokers
        refuse (unknown, no leader) is in `errors` with the Kafka error's name; no answer at all raises."""
        spec = {EARLIEST: OffsetSpec.earliest(), LATEST: OffsetSpec.latest()}.get(query) \
            if isinstance(query, str) else OffsetSpec.for_timestamp(query)
        request = {KafkaTopicPartition(tp.topic, tp.partition): spec for tp in set(partitions)}
        if not request:
            return {}, {}
        futures = self._admin.list_offsets(request, request_timeout=self.timeout_s)
        offsets, errors = {}, {}
        for kafka_tp, future in futures.items():
            tp = TopicPartition(kafka_tp.topic, kafka_tp.partition)
            try:
                offsets[tp] = self._wait(future, f"list offsets of {tp}").offset
            except KafkaApiError as e:
                if e.status == 503:
                    raise
                errors[tp] = e.error
        return offsets, errors

    def topic_partitions(self, topics: Iterable[str]) -> dict[str, list[int]]:
        """Partition numbers of the named topics per the cluster's Metadata; unknown topics are absent."""
        wanted = set(topics)
        try:
            metadata = self._admin.list_topics(timeout=self.timeout_s)
        except KafkaException as e:
            raise self._error(e.args[0], "read the cluster metadata") from None
        return {name: sorted(t.partitions) for name, t in metadata.topics.items()
                if name in wanted and t.error is None}

    def _wait(self, future: concurrent.futures.Future, action: str, group_id: str | None = None):
        try:
            return future.result(timeout=self.timeout_s + 1)
        except KafkaException as e:
            raise self._error(e.args[0], action, group_id) from None
        except concurrent.futures.TimeoutError:
            raise self._no_answer(action, "no answer") from None

    def _error(self, error: KafkaError | Exception, action: str, group_id: str | None = None) -> KafkaApiError:
        if isinstance(error, KafkaException):
            error = error.args[0]
        if not isinstance(error, KafkaError):
            return KafkaApiError("UNKNOWN_SERVER_ERROR", f"Could not {action}: {error}", 502)
        code = error.code()
        if code in _NO_ANSWER_ERRORS:
            return self._no_answer(action, error.str())
        if code in _COORDINATOR_ERRORS:
            return KafkaApiError("COORDINATOR_NOT_AVAILABLE",
                                 f"Could not {action}: the group coordinator is not available ({error.str()}).", 503)
        if code == KafkaError.GROUP_ID_NOT_FOUND:
            return KafkaApiError("GROUP_ID_NOT_FOUND", f"Consumer group '{group_id}' does not exist.", 404)
        if code in _ACTIVE_GROUP_ERRORS:
            return KafkaApiError("NON_EMPTY_GROUP", f"Could not {action}: the group has active members "
                                                    f"({error.name()}).", 409)
        if code in _UNKNOWN_PARTITION_ERRORS:
            return KafkaApiError("UNKNOWN_TOPIC_OR_PARTITION", f"Could not {action}: {error.str()}", 404)
        return KafkaApiError(error.name().lstrip("_"), f"Could not {action}: {error.str()}", 502)

    def _no_answer(self, action: str, detail: str) -> KafkaApiError:
        """librdkafka retries until the deadline: the cluster is unreachable, or (if it still answers Metadata)
        the group's coordinator is not available."""
        try:
            self._admin.list_topics(timeout=min(1.0, self.timeout_s))
        except KafkaException:
            return KafkaApiError("BROKER_NOT_AVAILABLE", f"Could not {action}: the Kafka cluster at {self.bootstrap} "
                                                         f"did not answer within {self.timeout_s:g} s ({detail}).", 503)
        return KafkaApiError("COORDINATOR_NOT_AVAILABLE", f"Could not {action}: the cluster answers, but no "
                                                          f"group coordinator did within {self.timeout_s:g} s "
                                                          f"({detail}).", 503)
