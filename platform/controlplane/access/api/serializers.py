from rest_framework import serializers

from ..tokens import MAX_EXPIRY_DAYS


class ObtainTokenSerializer(serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField(style={"input_type": "password"}, trim_whitespace=False)
    name = serializers.CharField(required=False, max_length=100,
                                 help_text="a name for the token, unique among yours (default: 'obtained <time>')")
    expires_in_days = serializers.IntegerField(required=False, allow_null=True, min_value=1,
                                               max_value=MAX_EXPIRY_DAYS, help_text="absent or null: never expires")


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="send as `Authorization: Token <token>`; shown only this once")
    name = serializers.CharField()
    expiry = serializers.DateTimeField(allow_null=True)
