from rest_framework import serializers

from ..election import PREFERRED, UNCLEAN


class TopicPartitionSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField(min_value=0)


class ElectLeadersSerializer(serializers.Serializer):
    election_type = serializers.ChoiceField(choices=(PREFERRED, UNCLEAN), default=PREFERRED)
    partitions = TopicPartitionSerializer(many=True, required=False, allow_null=True, default=None,
                                          help_text="null or absent: every partition")


class ElectionResultSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    error = serializers.CharField(allow_null=True, help_text="null on success, else the Kafka error name")


class ElectLeadersResultSerializer(serializers.Serializer):
    results = ElectionResultSerializer(many=True)
