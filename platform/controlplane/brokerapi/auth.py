"""Bearer-token authentication of the internal API with the cluster secret (constant-time comparison)."""

import functools
import hmac
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

__all__ = ("cluster_secret_required",)


def _authorized(request: HttpRequest) -> bool:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(),
                                                              settings.STROM_CLUSTER_SECRET.encode())


def cluster_secret_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """401 unless the request carries `Authorization: Bearer <STROM_CLUSTER_SECRET>`. No sessions, no CSRF."""

    @csrf_exempt
    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not _authorized(request):
            response = JsonResponse({"error": "CLUSTER_AUTHORIZATION_FAILED",
                                     "message": "Missing or wrong cluster secret"}, status=401)
            response["WWW-Authenticate"] = 'Bearer realm="strom-internal"'
            return response
        return view(request, *args, **kwargs)

    return wrapper
