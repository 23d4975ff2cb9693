import django_filters

from .models import Partition, Topic


class TopicFilterSet(django_filters.FilterSet):
    name__contains = django_filters.CharFilter(field_name="name", lookup_expr="icontains")

    class Meta:
        model = Topic
        fields = {"name": ["exact", "in", "startswith"]}


class PartitionFilterSet(django_filters.FilterSet):
    topic = django_filters.CharFilter(field_name="topic__name")
    leader = django_filters.NumberFilter()

    class Meta:
        model = Partition
        fields = ("topic", "partition", "leader")
