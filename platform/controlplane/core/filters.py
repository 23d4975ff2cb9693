"""Filtering shared by every REST list and console filter form: times in any ISO 8601 offset, compared in UTC.

PostgreSQL refuses UTC offsets beyond ±15:59 that Python parses happily (e.g. `…+19:13`), which made such a
query parameter a 500; times are therefore converted to UTC first, and one that leaves the calendar in UTC
(`0001-01-01T00:00+05:00`) is a 400 like any other bad value.
"""

import datetime

import django_filters
from django.core.exceptions import ValidationError
from django.db import models
from django_filters.fields import IsoDateTimeField
from django_filters.rest_framework import DjangoFilterBackend

__all__ = ("FilterBackend", "FilterSet", "UtcIsoDateTimeFilter")


class UtcIsoDateTimeField(IsoDateTimeField):
    def to_python(self, value):
        parsed = super().to_python(value)
        if parsed is None:
            return None
        try:
            return parsed.astimezone(datetime.UTC)
        except OverflowError:
            raise ValidationError("This time is out of range in UTC.", code="invalid") from None


class UtcIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField


class FilterSet(django_filters.rest_framework.FilterSet):
    """The base of generated filtersets (`filterset_fields`): DRF's, with times in UTC."""

    FILTER_DEFAULTS = {**django_filters.rest_framework.FilterSet.FILTER_DEFAULTS,
                       models.DateTimeField: {"filter_class": UtcIsoDateTimeFilter}}


class FilterBackend(DjangoFilterBackend):
    filterset_base = FilterSet
