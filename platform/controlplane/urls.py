"""URL map. The Dash dashboard is not here: it is mounted beside Django at /dashboard/ (see wsgi.py)."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/", include(("controlplane.api.urls", "api"))),
    # The brokers' internal API (cluster-secret bearer auth), outside the public REST API and its schema.
    path("internal/v1/", include("controlplane.brokerapi.urls")),
    # Burrow's HTTP API v3 and Prometheus /metrics of consumer lag, forwarded to the lag monitor.
    path("", include("controlplane.lag.urls")),
    path("", include("controlplane.console.urls")),
]
