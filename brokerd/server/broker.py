"""Composition root: storage, metadata, partitions, groups, dispatcher and listener, started and stopped in order.

Start: load the logs; bind the listening sockets (so port 0 resolves before anything advertises it);
open the metadata store (standalone: a local file; cluster: register with the control plane and load
its image) and apply its topic configs to the logs; start log maintenance; start the replica manager
(leaders and followers per the image, fetchers, ISR checks); start the group manager (coordinators for
the `__consumer_offsets` partitions led here); start serving. Stop, in reverse: tell the control plane
we are shutting down, unload the group coordinators (parked JoinGroup/SyncGroup answer NOT_COORDINATOR
instead of holding the drain), stop serving (in-flight requests drain), stop replication, stop the
metadata store's loops, close the logs. Once started, every object alive (modules, kio schemas, the
image, the logs' state) is frozen out of garbage collection (`gc.freeze`; again after each large batch of new
replicas, `ReplicaManager._create_off_loop`, and after a slow full collection, `brokerd.gc_policy`): a full
collection would otherwise walk them all, holding the event
loop for tens of milliseconds. Metrics (`brokerd.metrics`)
start once the broker serves: the Prometheus endpoint when `strom.metrics.port` is set, the
`__strom_metrics` publisher unless `strom.metrics.topic.enable=false`; they stop first.
"""

import asyncio
import gc
import logging
import socket

from brokerd.clock import SystemClock
from brokerd.config import BrokerConfig, Listener
from brokerd.counters import RequestMetrics
from brokerd.groups.manager import GroupManager
from brokerd.metadata.cluster import ClusterMetadataStore, ClusterSettings
from brokerd.metadata.image import BrokerEndpoint
from brokerd.metadata.standalone import FILE_NAME, StandaloneMetadataStore
from brokerd.metadata.store import MetadataStore
from brokerd.metadata.validation import TopicDefaults
from brokerd.metrics.prometheus import MetricsHttpServer
from brokerd.metrics.publisher import MetricsPublisher
from brokerd.metrics.sample import Sampler
from brokerd.replication.config import replication_config
from brokerd.replication.replica_manager import ReplicaManager
from brokerd.server.context import BrokerServices
from brokerd.server.dispatcher import Dispatcher
from brokerd.server.handlers import HANDLERS
from brokerd.server.listener import KafkaListener
from brokerd.storage import LogManager

log = logging.getLogger(__name__)


def advertised_endpoint(config: BrokerConfig, bound_ports: list[int]) -> BrokerEndpoint:
    """The first advertised listener; port 0 becomes the port actually bound, a wildcard host this host."""
    advertised: Listener = config.advertised_listeners[0]
    port = advertised.port or bound_ports[0]
    host = advertised.host if advertised.host not in ("", "0.0.0.0", "::") else socket.getfqdn()
    return BrokerEndpoint(node_id=config.node_id, host=host, port=port)


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self._log_manager = LogManager(log_dirs=list(config.log_dirs), cluster_defaults=config.topic_defaults,
                                       clock=SystemClock(),
                                       retention_check_interval_ms=config.log_retention_check_interval_ms)
        self._listener = KafkaListener(config.connections)
        self.endpoint: BrokerEndpoint | None = None
        self.metadata: MetadataStore | None = None
        self.replicas: ReplicaManager | None = None
        self.groups: GroupManager | None = None
        self.requests = RequestMetrics() if config.metrics.enable else None
        self.metrics_server: MetricsHttpServer | None = None
        self.publisher: MetricsPublisher | None = None

    def _metadata_store(self, endpoint: BrokerEndpoint) -> MetadataStore:
        config = self.config
        if config.controlplane_url is None:
            return StandaloneMetadataStore(config.log_dirs[0] / FILE_NAME, endpoint,
                                           TopicDefaults(config.num_partitions, config.default_replication_factor))
        listener = config.advertised_listeners[0]
        return ClusterMetadataStore(ClusterSettings(
            url=config.controlplane_url, secret=config.cluster_secret or "", broker_id=config.node_id,
            listeners=f"{listener.name}://{endpoint.host}:{endpoint.port}", rack=config.rack,
            log_dirs=tuple(str(d) for d in config.log_dirs),
            metadata_wait_ms=int(config.properties.get("strom.metadata.wait.ms", "10000"))))

    async def start(self) -> None:
        self._log_manager.startup()
        await self._listener.bind(self.config.listeners)
        self.endpoint = advertised_endpoint(self.config, self._listener.bound_ports)
        metadata = self.metadata = self._metadata_store(self.endpoint)
        await metadata.start()
        for topic in metadata.image.topics.values():  # logs loaded at startup get their topic's overrides
            self._log_manager.update_topic_config(topic.name, dict(topic.configs))
        self._log_manager.start()
        self.replicas = ReplicaManager(self._log_manager, metadata, self.config.node_id,
                                       replication_config(self.config.properties), SystemClock(),
                                       self.config.properties, metrics_enabled=self.config.metrics.enable)
        self.replicas.start()
        self.groups = GroupManager(metadata, self.replicas, self.config.groups, SystemClock())
        self.groups.start()
        services = BrokerServices(self.config, metadata, self.replicas, self.endpoint, self.groups, self.requests)
        await self._listener.serve(Dispatcher(services, HANDLERS))
        await self._start_metrics()
        gc.freeze()
        log.info("broker %d serving at %s:%d (cluster %s)", self.config.node_id, self.endpoint.host,
                 self.endpoint.port, metadata.image.cluster_id)

    async def _start_metrics(self) -> None:
        settings = self.config.metrics
        assert self.replicas is not None and self.metadata is not None
        if self.requests is None:
            return
        sampler = Sampler(self.config.node_id, self.replicas, self._log_manager, self.metadata, self.requests,
                          lambda: self._listener.connection_count)
        if settings.port is not None:
            self.metrics_server = MetricsHttpServer(sampler.take)
            await self.metrics_server.start(settings.host or self.config.listeners[0].host, settings.port)
            log.info("broker %d serves Prometheus metrics on port %d", self.config.node_id, self.metrics_server.port)
        if settings.topic_enable:
            self.publisher = MetricsPublisher(settings, sampler, self.metadata)
            self.publisher.start()

    async def stop(self) -> None:
        if self.publisher is not None:
            await self.publisher.stop()
        if self.metrics_server is not None:
            await self.metrics_server.stop()
        if isinstance(self.metadata, ClusterMetadataStore):
            await self.metadata.request_shutdown()
        if self.groups is not None:
            await self.groups.stop()
        await self._listener.stop(self.config.shutdown_timeout_ms / 1000)
        if self.replicas is not None:
            await self.replicas.stop()
        if self.metadata is not None:
            await self.metadata.stop()
        self._log_manager.shutdown()


async def run_until_stopped(broker: Broker, stop: asyncio.Event) -> None:
    await broker.start()
    try:
        await stop.wait()
    finally:
        await broker.stop()
