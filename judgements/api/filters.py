"""Filters of the judgement log (django-filter), shared by lists and exports."""

import datetime as dt

import django_filters
from django import forms
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter

from config.ids import MAX_ID
from judgements.models import Hit, Judgement


class IdFilter(django_filters.NumberFilter):
    # Whole numbers within bigint: a decimal or a huge number is a 400, not a
    # database error.
    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs):
        super().__init__(*args, min_value=1, max_value=MAX_ID, **kwargs)


class UtcTimeField(django_filters.fields.IsoDateTimeField):
    def to_python(self, value):
        moment = super().to_python(value)
        try:
            # PostgreSQL refuses offsets beyond 15:59 that Python accepts.
            return moment.astimezone(dt.UTC) if moment else moment
        except OverflowError:
            raise forms.ValidationError("This time is out of range.", code="invalid") from None


class TimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcTimeField


class JudgementFilter(django_filters.FilterSet):
    project = django_filters.CharFilter(
        field_name="query__project__slug", help_text="Project slug."
    )
    query = IdFilter(field_name="query_id", help_text="Query id.")
    query_external_id = django_filters.CharFilter(
        field_name="query__external_id", help_text="The query's external id (the team's qid)."
    )
    document = IdFilter(field_name="document_id", help_text="Document id.")
    rater = django_filters.CharFilter(field_name="rater__username", help_text="Username.")
    source = django_filters.ChoiceFilter(choices=Judgement.Source.choices)
    kind = django_filters.ChoiceFilter(choices=Judgement.Kind.choices)
    since = TimeFilter(
        field_name="created_at", lookup_expr="gte", help_text="Events at or after (ISO 8601)."
    )
    until = TimeFilter(
        field_name="created_at", lookup_expr="lte", help_text="Events at or before (ISO 8601)."
    )
    import_id = django_filters.UUIDFilter(help_text="Events of one import.")

    class Meta:
        model = Judgement
        fields = []


class HitFilter(django_filters.FilterSet):
    query = IdFilter(field_name="query_id", help_text="Query id.")
    query_external_id = django_filters.CharFilter(
        field_name="query__external_id", help_text="The query's external id (the team's qid)."
    )

    class Meta:
        model = Hit
        fields = []


def filter_parameters(filterset_class) -> list[OpenApiParameter]:
    """OpenAPI query parameters for a FilterSet, for views that are not plain lists."""
    types = {
        IdFilter: OpenApiTypes.INT,
        TimeFilter: OpenApiTypes.DATETIME,
        django_filters.UUIDFilter: OpenApiTypes.UUID,
    }
    return [
        OpenApiParameter(
            name,
            types.get(type(spec), OpenApiTypes.STR),
            enum=[value for value, _ in spec.extra.get("choices", [])] or None,
            description=spec.extra.get("help_text", ""),
        )
        for name, spec in filterset_class.base_filters.items()
    ]
