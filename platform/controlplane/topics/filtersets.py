import django_filters

from controlplane.core.filters import FilterSet, Int64Filter

from .models import Partition, Topic


class TopicFilterSet(FilterSet):
    name__contains = django_filters.CharFilter(field_name="name", lookup_expr="icontains")

    class Meta:
        model = Topic
        fields = {"name": ["exact", "in", "startswith"]}


class PartitionFilterSet(FilterSet):
    topic = django_filters.CharFilter(field_name="topic__name")
    leader = Int64Filter()

    class Meta:
        model = Partition
        fields = ("topic", "partition", "leader")
