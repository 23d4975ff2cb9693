"""Burrow's paths and /metrics at the site root (where Burrow's clients and Prometheus look)."""

from django.urls import path, re_path

from .views import BurrowView, MetricsView

urlpatterns = [
    path("metrics", MetricsView.as_view(), name="lag-metrics"),
    re_path(r"^v3/(?P<rest>.*)$", BurrowView.as_view(), name="burrow"),
]
