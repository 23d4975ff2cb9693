"""`manage.py configs`: Kafka's kafka-configs.sh for topics (and, read-only, brokers), with the same output.

    configs --entity-type topics [--entity-name T] --describe [--all]
    configs --entity-type topics --entity-name T --alter [--add-config k=v[,k=v…]] [--delete-config k[,k…]]
    configs --entity-type brokers [--entity-name B] --describe

Topic configs are validated with Kafka's rules (`kafkaspec.topic_config`) and an alteration is checked for, and
recorded as, the `--as` user. Strom brokers take their settings from their own server.properties and have no
dynamic broker configs: describing brokers lists none, altering them is refused.
"""

from django.core.management.base import CommandError

from controlplane.access import actions
from controlplane.access.commands import ActorCommand
from controlplane.cluster.models import Broker
from controlplane.core.errors import KafkaApiError
from controlplane.topics import services
from controlplane.topics.describe import TOPIC_OVERRIDE, ConfigEntry, config_entries
from controlplane.topics.management.commands.topics import parse_config_pairs
from controlplane.topics.models import Topic

__all__ = ("Command", "config_line")


def config_line(entry: ConfigEntry) -> str:
    """One config as kafka-configs --describe prints it, with its synonyms (the override, then the default)."""
    default = f"DEFAULT_CONFIG:{entry.broker_key or entry.name}={entry.default}"
    synonyms = f"DYNAMIC_TOPIC_CONFIG:{entry.name}={entry.value}, {default}" if entry.source == TOPIC_OVERRIDE \
        else default
    return f"  {entry.name}={entry.value} sensitive=false synonyms={{{synonyms}}}"


class Command(ActorCommand):
    help = "Describe or alter topic configs (like kafka-configs.sh)."

    def add_arguments(self, parser):
        parser.add_argument("--entity-type", required=True, choices=["topics", "brokers"])
        parser.add_argument("--entity-name", help="The topic name or broker id (default: all).")
        verb = parser.add_mutually_exclusive_group(required=True)
        verb.add_argument("--describe", action="store_true", help="List configs for the given entities.")
        verb.add_argument("--alter", action="store_true", help="Alter the configuration of the entity.")
        parser.add_argument("--all", action="store_true", help="With --describe: every config, not only overrides.")
        parser.add_argument("--add-config", action="append", default=[], metavar="K=V[,K=V…]",
                            help="Configs to set.")
        parser.add_argument("--delete-config", action="append", default=[], metavar="K[,K…]",
                            help="Config overrides to remove.")

    def handle(self, *args, **options):
        name = options["entity_name"]
        try:
            if options["entity_type"] == "brokers":
                self._brokers(name, options)
            elif options["describe"]:
                self._describe(name, options["all"])
            else:
                self._alter(name, options)
        except KafkaApiError as e:
            raise CommandError(f"{e.error}: {e.message}") from None

    def _brokers(self, name: str | None, options) -> None:
        if options["alter"]:
            raise CommandError("Strom brokers read their settings from server.properties at start; there are no "
                               "dynamic broker configs to alter")
        brokers = Broker.objects.order_by("broker_id")
        if name is not None:
            brokers = brokers.filter(broker_id=int(name) if name.isdecimal() else -1)
            if not brokers.exists():
                raise KafkaApiError("BROKER_ID_NOT_REGISTERED", f"Broker {name} is not registered")
        for broker in brokers:
            self.stdout.write(f"Dynamic configs for broker {broker.broker_id} are:")

    def _describe(self, name: str | None, everything: bool) -> None:
        topics = Topic.objects.order_by("name")
        if name is not None:
            topics = topics.filter(name=name)
            if not topics.exists():
                raise KafkaApiError("UNKNOWN_TOPIC_OR_PARTITION", f"The topic '{name}' does not exist.")
        for topic in topics:
            self.stdout.write(f"{'All' if everything else 'Dynamic'} configs for topic {topic.name} are:")
            for entry in config_entries(topic):
                if everything or entry.source == TOPIC_OVERRIDE:
                    self.stdout.write(config_line(entry))

    def _alter(self, name: str | None, options) -> None:
        if not name:
            raise CommandError("--alter needs --entity-name")
        added = parse_config_pairs(options["add_config"])
        deleted = [k.strip() for arg in options["delete_config"] for k in arg.split(",") if k.strip()]
        if not added and not deleted:
            raise CommandError("--alter needs --add-config or --delete-config")
        with self.audited(actions.ALTER_CONFIGS, f"topic:{name}") as change:
            change.before = services.audit_state(name)
            services.alter_configs(name, added, deleted)
            change.after = services.audit_state(name)
        self.stdout.write(f"Completed updating config for topic {name}.")
