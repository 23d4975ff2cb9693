from rest_framework import serializers

from ..models import BrokerMetricPoint, TopicMetricPoint


class BrokerMetricPointSerializer(serializers.ModelSerializer):
    class Meta:
        model = BrokerMetricPoint
        exclude = ("id",)


class TopicMetricPointSerializer(serializers.ModelSerializer):
    class Meta:
        model = TopicMetricPoint
        exclude = ("id",)
