"""Dynamic broker configs (Kafka's `kafka-configs --entity-type brokers [--entity-name N | --entity-default]`):
today the replication throttle rates (`kafkaspec.replication_throttles.BROKER_DYNAMIC_CONFIGS`).

Stored as Kafka's strings in `BrokerConfig` rows, one per broker id plus `CLUSTER_DEFAULT`, and handed to
brokers in the metadata image (`broker_configs`). Each change is one transaction under
`metadata.locked_state()` that bumps the metadata version, so brokers apply it within milliseconds.
"""

from collections.abc import Mapping, Sequence

from django.db import transaction

from controlplane.core.errors import KafkaApiError
from kafkaspec.replication_throttles import validate_broker_overrides
from kafkaspec.topic_config import InvalidConfigError

from . import changelog, metadata
from .models import CLUSTER_DEFAULT, BrokerConfig

__all__ = ("alter_broker_configs", "broker_configs")


def broker_configs(broker_id: int) -> dict[str, str]:
    """The overrides of `broker_id` (CLUSTER_DEFAULT: the cluster-wide default)."""
    row = BrokerConfig.objects.filter(broker_id=broker_id).first()
    return dict(row.configs) if row else {}


def alter_broker_configs(broker_ids: Sequence[int], set_configs: Mapping[str, object] | None = None,
                         delete: Sequence[str] = (), validate_only: bool = False) -> dict[int, dict[str, str]]:
    """IncrementalAlterConfigs on brokers: set these, delete those, keep the rest, on every broker of
    `broker_ids` (CLUSTER_DEFAULT for the default). INVALID_CONFIG for a name that is not dynamic or a bad value.
    Answers the new overrides by broker id."""
    set_configs = dict(set_configs or {})
    try:
        validate_broker_overrides(set_configs)
        validate_broker_overrides(dict.fromkeys(delete, "0"))
    except InvalidConfigError as e:
        raise KafkaApiError("INVALID_CONFIG", str(e)) from None
    if any(b < CLUSTER_DEFAULT for b in broker_ids):
        raise KafkaApiError("INVALID_REQUEST", f"Invalid broker ids {sorted(broker_ids)}")
    answers = {}
    with transaction.atomic():
        state = metadata.locked_state()
        changed = False
        for broker_id in broker_ids:
            old = broker_configs(broker_id)
            new = {k: v for k, v in old.items() if k not in delete}
            new.update({k: str(v) for k, v in set_configs.items()})
            answers[broker_id] = new
            if new != old and not validate_only:
                BrokerConfig.objects.update_or_create(broker_id=broker_id, defaults={"configs": new})
                changed = True
        if changed:
            changelog.note_broker_configs()
            metadata.bump(state)
    return answers
