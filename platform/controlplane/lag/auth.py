"""API-token authentication for tools written for Burrow and for Prometheus: knox's token under either
`Authorization: Token <token>` (the REST API's) or `Authorization: Bearer <token>` (Prometheus'
`authorization` / `bearer_token_file`, most HTTP clients)."""

from knox.auth import TokenAuthentication
from rest_framework import exceptions
from rest_framework.authentication import get_authorization_header


class TokenOrBearerAuthentication(TokenAuthentication):
    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != b"bearer":
            return super().authenticate(request)
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Invalid bearer header: expected `Bearer <token>`.")
        return self.authenticate_credentials(parts[1])
