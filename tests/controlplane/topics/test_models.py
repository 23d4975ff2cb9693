import pytest
from django.core.exceptions import ValidationError

from controlplane.topics.models import NO_LEADER, Partition, Topic


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "configs", "message"), [
    ("bad name", {}, "illegal"),
    ("..", {}, "cannot be"),
    ("t" * 250, {}, "longer than 249"),
    ("ok", {"retention.ms": "-5"}, "at least -1"),
    ("ok", {"segment.bytes": "big"}, "32-bit integer"),
    ("ok", {"unknown.key": "1"}, "Unknown topic config"),
    ("ok", ["retention.ms"], "mapping"),
])
def test_invalid_topics_are_refused(name, configs, message):
    with pytest.raises(ValidationError, match=message):
        Topic(name=name, configs=configs).full_clean()


@pytest.mark.django_db
def test_names_differing_only_in_dot_and_underscore_collide():
    Topic.objects.create(name="metrics.cpu")
    with pytest.raises(ValidationError, match="collides with existing topic 'metrics.cpu'"):
        Topic(name="metrics_cpu").full_clean()
    Topic(name="metrics-cpu").full_clean()


@pytest.mark.django_db
def test_effective_configs_layer_overrides_on_defaults():
    topic = Topic.objects.create(name="logs", configs={"cleanup.policy": "compact"})
    effective = topic.effective_configs()
    assert effective["cleanup.policy"] == ("compact",)
    assert effective["retention.ms"] == 604_800_000


@pytest.mark.django_db
@pytest.mark.parametrize(("replicas", "isr", "leader", "message"), [
    ([], [], NO_LEADER, "non-empty"),
    ([1, 1], [1], 1, "distinct"),
    ([1, 2], [1, 3], 1, "ISR member must be a replica"),
    ([1, 2], [2], 1, "leader must be in the ISR"),
])
def test_invalid_assignments_are_refused(replicas, isr, leader, message):
    topic = Topic.objects.create(name="t")
    with pytest.raises(ValidationError, match=message):
        Partition(topic=topic, partition=0, replicas=replicas, isr=isr, leader=leader).full_clean()


@pytest.mark.django_db
def test_partition_state_flags():
    topic = Topic.objects.create(name="t")
    healthy = Partition(topic=topic, partition=0, replicas=[1, 2], isr=[1, 2], leader=1)
    lagging = Partition(topic=topic, partition=1, replicas=[1, 2], isr=[1], leader=1)
    leaderless = Partition(topic=topic, partition=2, replicas=[1, 2], isr=[], leader=NO_LEADER)
    healthy.full_clean()
    leaderless.full_clean()
    assert (healthy.is_under_replicated, healthy.is_offline) == (False, False)
    assert (lagging.is_under_replicated, lagging.is_offline) == (True, False)
    assert leaderless.is_offline


@pytest.mark.django_db
def test_partition_numbers_are_unique_per_topic():
    from django.db import IntegrityError

    topic = Topic.objects.create(name="t")
    Partition.objects.create(topic=topic, partition=0, replicas=[1], isr=[1], leader=1)
    with pytest.raises(IntegrityError):
        Partition.objects.create(topic=topic, partition=0, replicas=[2], isr=[2], leader=2)
