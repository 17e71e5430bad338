"""Integers that name rows, bounded to PostgreSQL's bigint wherever a request carries one.

Python's int has no end; bigint ends at 2**63 - 1. A number past it that reaches the
database is a DataError (a 500), or worse, an offset that overflows inside a query.
So every integer a request carries goes through one of these: the ``<id:...>`` path
converter (404 past the range), ``IdField`` in forms, ``ApiIdField`` in serializers
(400 naming the field), and ``page_number()`` for ``?page=`` (404 past the last page
any list can have).
"""

from django import forms
from django.http import Http404
from django.urls import register_converter
from rest_framework import serializers

MAX_ID = 2**63 - 1


class IdConverter:
    """``<id:pk>``: like ``<int:pk>``, but a number past bigint matches no URL (404)."""

    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > MAX_ID:
            raise ValueError(f"{value} is past the largest id.")
        return number

    def to_url(self, value) -> str:
        return str(value)


class IdField(forms.IntegerField):
    """A form's row id: a whole number from 1 to bigint's end."""

    def __init__(self, **kwargs):
        kwargs.setdefault("min_value", 1)
        super().__init__(max_value=MAX_ID, **kwargs)


class ApiIdField(serializers.IntegerField):
    """A serializer's row id: a whole number from 1 to bigint's end."""

    def __init__(self, **kwargs):
        kwargs.setdefault("min_value", 1)
        super().__init__(max_value=MAX_ID, **kwargs)


def page_number(value: str | None, *, per_page: int) -> int:
    """The page number ``?page=`` asks for: 1 when absent or not a number; 404 when its
    rows would start past the last row any table can hold."""
    try:
        number = max(1, int(value or 1))
    except ValueError:
        return 1
    if (number - 1) * per_page > MAX_ID:
        raise Http404("No such page.")
    return number


# Registered with the class, so that every URL module that writes <id:...> (each imports
# this one) finds it however the modules are first imported: a test that imported
# judgements.urls before config.urls failed to load.
register_converter(IdConverter, "id")
