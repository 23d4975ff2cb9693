"""Composition root: storage, metadata, partitions, dispatcher and listener, started and stopped in order.

Start: load the logs; bind the listening sockets (so port 0 resolves before anything advertises it);
open the metadata store and apply its topic configs to the logs; start log maintenance; build the
services; start serving. Stop: the listener drains in-flight
requests, then the logs close.
"""

import asyncio
import logging
import socket

from brokerd.clock import SystemClock
from brokerd.config import BrokerConfig, Listener
from brokerd.metadata.image import BrokerEndpoint
from brokerd.metadata.standalone import FILE_NAME, StandaloneMetadataStore
from brokerd.metadata.validation import TopicDefaults
from brokerd.partition.manager import PartitionManager
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
                                       clock=SystemClock())
        self._listener = KafkaListener(config.socket_request_max_bytes, config.connections_max_idle_ms)
        self.endpoint: BrokerEndpoint | None = None

    async def start(self) -> None:
        self._log_manager.startup()
        await self._listener.bind(self.config.listeners)
        self.endpoint = advertised_endpoint(self.config, self._listener.bound_ports)
        metadata = StandaloneMetadataStore(
            self.config.log_dirs[0] / FILE_NAME, self.endpoint,
            TopicDefaults(self.config.num_partitions, self.config.default_replication_factor))
        metadata.open()
        for topic in metadata.image.topics.values():  # logs loaded at startup get their topic's overrides
            self._log_manager.update_topic_config(topic.name, dict(topic.configs))
        self._log_manager.start()
        partitions = PartitionManager(self._log_manager, metadata, self.config.node_id)
        services = BrokerServices(self.config, metadata, partitions, self.endpoint)
        await self._listener.serve(Dispatcher(services, HANDLERS))
        log.info("broker %d serving at %s:%d (cluster %s)", self.config.node_id, self.endpoint.host,
                 self.endpoint.port, metadata.image.cluster_id)

    async def stop(self) -> None:
        await self._listener.stop(self.config.shutdown_timeout_ms / 1000)
        self._log_manager.shutdown()


async def run_until_stopped(broker: Broker, stop: asyncio.Event) -> None:
    await broker.start()
    try:
        await stop.wait()
    finally:
        await broker.stop()
