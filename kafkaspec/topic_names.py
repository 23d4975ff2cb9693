"""Topic-name rules, exactly as Kafka's `org.apache.kafka.common.internals.Topic` applies them."""

import re

MAX_NAME_LENGTH = 249
LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
INTERNAL_TOPICS = frozenset({CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})


class InvalidTopicNameError(ValueError):
    """The name breaks Kafka's topic-name rules (wire: INVALID_TOPIC_EXCEPTION, HTTP: 400)."""


def validate_topic_name(name: str) -> None:
    """Raise InvalidTopicNameError unless `name` is a legal Kafka topic name."""
    if not name:
        raise InvalidTopicNameError("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicNameError("Topic name cannot be \".\" or \"..\"")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicNameError(
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, "
            f"topic name: {name}"
        )
    if not LEGAL_NAME.fullmatch(name):
        raise InvalidTopicNameError(
            f"Topic name \"{name}\" is illegal, it contains a character other than "
            "ASCII alphanumerics, '.', '_' and '-'"
        )


def is_internal(name: str) -> bool:
    return name in INTERNAL_TOPICS


def unify_collision_chars(name: str) -> str:
    """Kafka forbids two topics whose names differ only in '.' versus '_' (metric names collide)."""
    return name.replace(".", "_")
