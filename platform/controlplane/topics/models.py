"""Topics and partitions with their replica assignment: Strom's equivalent of Kafka's topic metadata."""

import uuid

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from kafkaspec import topic_config, topic_names

NO_LEADER = -1


def validate_topic_name(value: str) -> None:
    try:
        topic_names.validate_topic_name(value)
    except topic_names.InvalidTopicNameError as e:
        raise ValidationError(str(e)) from None


def validate_topic_configs(value: object) -> None:
    if not isinstance(value, dict):
        raise ValidationError("Topic configs must be a mapping of Kafka config names to values")
    try:
        topic_config.validate_overrides(value)
    except topic_config.InvalidConfigError as e:
        raise ValidationError(str(e)) from None


class Topic(models.Model):
    """A topic. `configs` holds only the overrides of Kafka's topic configs, as strings keyed by Kafka name.

    Names follow Kafka's rules, and two names that differ only in '.' versus '_' cannot coexist.
    """

    name = models.CharField(max_length=topic_names.MAX_NAME_LENGTH, unique=True,
                            validators=[validate_topic_name])
    topic_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    configs = models.JSONField(default=dict, blank=True, validators=[validate_topic_configs],
                               help_text="per-topic config overrides, e.g. {\"retention.ms\": \"3600000\"}")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_internal(self) -> bool:
        return topic_names.is_internal(self.name)

    def clean(self) -> None:
        collision = (Topic.objects.exclude(pk=self.pk)
                     .filter(name__in={self.name.replace(".", "_"), self.name.replace("_", ".")})
                     .exclude(name=self.name).first())
        if collision and topic_names.unify_collision_chars(collision.name) == \
                topic_names.unify_collision_chars(self.name):
            raise ValidationError({"name": f"Topic '{self.name}' collides with existing topic "
                                           f"'{collision.name}' ('.' and '_' are interchangeable)"})

    def effective_configs(self) -> dict[str, topic_config.Value]:
        return topic_config.resolve(self.configs)


class Partition(models.Model):
    """One partition of a topic and its replica assignment.

    Invariants: `replicas` is a non-empty list of distinct broker ids, the first being the preferred
    leader; `isr` ⊆ `replicas`; `leader` ∈ `isr` or NO_LEADER (-1). `leader_epoch` increases with every
    leader change and whenever a replica leaves the replica set; `partition_epoch` with every change of
    leader, ISR or replicas (Kafka's KIP-841 fencing).

    A reassignment in progress (KIP-455, KRaft's PartitionRegistration) is `adding_replicas` /
    `removing_replicas` not both empty: then `replicas` = target replicas followed by the removing ones,
    `adding_replicas` = target − original, `removing_replicas` = original − target (both ⊆ `replicas`,
    disjoint). See `controller.reassignment`.
    """

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="partitions")
    partition = models.IntegerField(validators=[MinValueValidator(0)])
    replicas = models.JSONField(default=list, blank=True)
    isr = models.JSONField(default=list, blank=True)
    leader = models.IntegerField(default=NO_LEADER)
    leader_epoch = models.IntegerField(default=0, validators=[MinValueValidator(0)])
    partition_epoch = models.IntegerField(default=0, validators=[MinValueValidator(0)])
    adding_replicas = models.JSONField(default=list, blank=True,
                                       help_text="replicas a reassignment in progress adds (catching up)")
    removing_replicas = models.JSONField(default=list, blank=True,
                                         help_text="replicas a reassignment in progress removes once it completes")

    class Meta:
        ordering = ["topic__name", "partition"]
        constraints = [
            models.UniqueConstraint(fields=["topic", "partition"], name="topics_partition_unique_topic_partition"),
        ]

    def __str__(self) -> str:
        return f"{self.topic.name}-{self.partition}"

    @property
    def is_offline(self) -> bool:
        return self.leader == NO_LEADER

    @property
    def is_under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def is_reassigning(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    @property
    def target_replicas(self) -> list[int]:
        """The replica set once the reassignment in progress completes (`replicas` when none is)."""
        return [b for b in self.replicas if b not in self.removing_replicas]

    def clean(self) -> None:
        problems = []
        if not self.replicas or len(set(self.replicas)) != len(self.replicas) or \
                not all(isinstance(b, int) and b >= 0 for b in self.replicas):
            problems.append("replicas must be a non-empty list of distinct broker ids")
        if not set(self.isr) <= set(self.replicas):
            problems.append("every ISR member must be a replica")
        if self.leader != NO_LEADER and self.leader not in self.isr:
            problems.append("the leader must be in the ISR (or -1 for no leader)")
        if not set(self.adding_replicas) | set(self.removing_replicas) <= set(self.replicas) or \
                set(self.adding_replicas) & set(self.removing_replicas):
            problems.append("adding and removing replicas must be disjoint sets of replicas")
        if problems:
            raise ValidationError("; ".join(problems))
