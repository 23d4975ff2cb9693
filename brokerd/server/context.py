"""What a handler gets: the broker's services and the request it is answering."""

from collections.abc import Callable
from dataclasses import dataclass, field

from brokerd.config import BrokerConfig
from brokerd.counters import RequestMetrics
from brokerd.groups.manager import GroupManager
from brokerd.metadata.image import BrokerEndpoint
from brokerd.metadata.store import AdminOrigin, MetadataStore
from brokerd.protocol.messages import RequestHeader
from brokerd.protocol.responses import MessageSchema
from brokerd.replication.replica_manager import ReplicaManager


@dataclass(frozen=True, slots=True)
class BrokerServices:
    config: BrokerConfig
    metadata: MetadataStore
    replicas: ReplicaManager
    """Every replica on this broker, and the append call (`append_records`)."""
    endpoint: BrokerEndpoint
    """This broker as clients should reach it (first advertised listener)."""
    groups: GroupManager
    """The group coordinators of the `__consumer_offsets` partitions this broker leads."""
    requests: RequestMetrics | None = field(default_factory=RequestMetrics)
    """Requests per API: counts, failures, latency histograms (bumped by the dispatcher); None: not counted."""


@dataclass(frozen=True, slots=True)
class RequestContext:
    services: BrokerServices
    header: RequestHeader
    client_host: str
    response: MessageSchema
    """The entity classes of the response at the request's version (`header.api_version`)."""
    release: Callable[[], None] = lambda: None
    """Call once what is left of this request is a wait that later requests on the connection cannot change
    (an acks=all produce's batches are appended): the connection starts the next request meanwhile and
    still answers in request order (`server.connection`). Calling it is optional; completing releases."""
    counted_as: list[str] = field(default_factory=list)
    """Further RequestMetrics names the dispatcher times this request under, as Kafka's: a Fetch is also a
    FetchConsumer or a FetchFollower (set by the handler)."""

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def origin(self) -> AdminOrigin:
        """The client, as admin calls to the metadata store name it (for the control plane's audit log)."""
        return AdminOrigin(self.client_host, self.header.client_id or "")
