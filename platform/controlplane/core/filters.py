"""Filtering shared by every REST list and console filter form: times in any ISO 8601 offset, compared in UTC;
integers within the database's 64-bit range.

PostgreSQL refuses UTC offsets beyond ±15:59 that Python parses happily (e.g. `…+19:13`), which made such a
query parameter a 500; times are therefore converted to UTC first, and one that leaves the calendar in UTC
(`0001-01-01T00:00+05:00`) is a 400 like any other bad value. Likewise an integer beyond a signed 64-bit value
cannot be sent to SQLite or PostgreSQL at all (OverflowError, a 500): it is a 400 here.
"""

import datetime

import django_filters
from django.core.exceptions import ValidationError
from django.db import models
from django_filters.fields import IsoDateTimeField
from django_filters.rest_framework import DjangoFilterBackend

__all__ = ("FilterBackend", "FilterSet", "Int64Filter", "UtcIsoDateTimeFilter")


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


_INT64 = {"min_value": -(2**63), "max_value": 2**63 - 1}
_INTEGER_FIELDS = (models.IntegerField, models.BigIntegerField, models.SmallIntegerField,
                   models.PositiveIntegerField, models.PositiveBigIntegerField, models.PositiveSmallIntegerField,
                   models.AutoField, models.BigAutoField)


class Int64Filter(django_filters.NumberFilter):
    """A number filter on an integer column: out of the signed 64-bit range is a 400, not a database error."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{**_INT64, **kwargs})


class FilterSet(django_filters.rest_framework.FilterSet):
    """The base of every filterset (declared, or generated from `filterset_fields`): DRF's, with times in UTC
    and integers bounded to 64 bits."""

    FILTER_DEFAULTS = {**django_filters.rest_framework.FilterSet.FILTER_DEFAULTS,
                       models.DateTimeField: {"filter_class": UtcIsoDateTimeFilter},
                       **{field: {"filter_class": Int64Filter} for field in _INTEGER_FIELDS}}


class FilterBackend(DjangoFilterBackend):
    filterset_base = FilterSet
