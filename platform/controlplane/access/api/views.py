import datetime

from django.contrib.auth import authenticate
from django.core.exceptions import ValidationError
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, permissions
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane.audit.models import Source
from controlplane.audit.services import Actor

from ..checks import ActionRefused
from ..tokens import create_token
from .serializers import ObtainTokenSerializer, TokenSerializer


class ObtainTokenView(APIView):
    """A new API token for a user name and password (the console's Tokens page does the same for a logged-in
    user). Failed attempts count towards the login lockout (429)."""

    authentication_classes = ()
    permission_classes = (permissions.AllowAny,)

    @extend_schema(request=ObtainTokenSerializer, responses={
        200: TokenSerializer, 400: OpenApiResponse(description="wrong credentials or bad fields"),
        403: OpenApiResponse(description="the user has no role"),
        429: OpenApiResponse(description="too many failed logins for this user name from this address")})
    def post(self, request):
        body = ObtainTokenSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        user = authenticate(request._request, username=body.validated_data["username"],
                            password=body.validated_data["password"])
        if user is None:
            raise exceptions.ValidationError({"non_field_errors": ["Unable to log in with provided credentials."]})
        name = body.validated_data.get("name") or f"obtained {timezone.now():%Y-%m-%d %H:%M:%S.%f}"
        days = body.validated_data.get("expires_in_days")
        try:
            token, secret = create_token(Actor(user, request.META.get("REMOTE_ADDR", "")), Source.REST, name,
                                         None if days is None else datetime.timedelta(days=days))
        except ActionRefused as refused:
            raise exceptions.PermissionDenied(refused.reason) from None
        except ValidationError as invalid:
            raise exceptions.ValidationError({"name": invalid.messages}) from None
        return Response(TokenSerializer({"token": secret, "name": token.name, "expiry": token.expiry}).data)
