"""The dashboards' GET forms as the API's query parameters, and the pieces every metrics
response shares: the echoed spec, numbers without NaN, queries named by external id,
pages of rows."""

import math

from django import forms
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.exceptions import NotFound

from judgements.api.access import Pages
from judgements.models import Hit, Query, ResultList
from metrics.forms import SPEC_FIELDS
from metrics.registry import MetricSpec
from metrics.sources import Source

EXTERNAL_ID_HELP = (
    "The query's external id (the team's own qid, as in imported files); the app's "
    "query id as text when the query has none."
)
SOURCES = [source.value for source in Source]


def valid(form: forms.Form) -> forms.Form:
    """``form``, validated; a 400 in the API's error shape naming each field otherwise."""
    if not form.is_valid():
        raise serializers.ValidationError(
            {name: list(messages) for name, messages in form.errors.items()}
        )
    return form


def form_parameters(form_class: type[forms.Form], *exclude: str) -> list[OpenApiParameter]:
    """OpenAPI query parameters of a GET form's fields: a parameter added to the form
    (or to MetricSpec, which makes the form) is documented without further code."""
    return [
        OpenApiParameter(
            name,
            _schema_of(field),
            description=_description(name, field),
        )
        for name, field in form_class.base_fields.items()
        if name not in exclude and not isinstance(field.widget, forms.HiddenInput)
    ]


def _schema_of(field: forms.Field) -> dict:
    if isinstance(field, forms.TypedChoiceField) and field.coerce is int:
        return {"type": "integer"}
    if isinstance(field, forms.ChoiceField):
        return {"type": "string", "enum": [value for value, _ in field.choices]}
    if isinstance(field, forms.IntegerField):
        limits = {"minimum": field.min_value, "maximum": field.max_value}
        return {"type": "integer", **{key: v for key, v in limits.items() if v is not None}}
    if isinstance(field, forms.FloatField):
        return {"type": "number", "minimum": field.min_value or 0}
    if isinstance(field, forms.DateTimeField):
        return {"type": "string", "format": "date-time"}
    return {"type": "string"}


def _description(name: str, field: forms.Field) -> str:
    if name in SPEC_FIELDS:
        return f"{field.help_text} Default: the project's {name}.".strip()
    return str(field.help_text)


def _spec_fields() -> dict[str, serializers.Field]:
    fields: dict[str, serializers.Field] = {
        "k": serializers.IntegerField(allow_null=True, help_text="Null: the whole list.")
    }
    for name, allowed in MetricSpec._choices().items():
        fields[name] = serializers.ChoiceField(choices=list(allowed))
    return fields


# Made from MetricSpec's fields, like the forms: a new parameter is echoed by every
# response and documented in the schema without further code.
MetricSpecSerializer = type(serializers.Serializer)(
    "MetricSpecSerializer",
    (serializers.Serializer,),
    {
        "__module__": __name__,
        **_spec_fields(),
        "name": serializers.CharField(help_text="Every parameter: the name stored points carry."),
        "label": serializers.CharField(help_text="Short form for tables, e.g. NDCG@10."),
    },
)


def spec_data(spec: MetricSpec) -> dict:
    return {**spec.as_dict(), "name": spec.name, "label": spec.label}


class IntervalSerializer(serializers.Serializer):
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    confidence = serializers.FloatField()
    resamples = serializers.IntegerField()
    seed = serializers.IntegerField()


def interval_data(interval, seed: int) -> dict:
    return {
        "low": number(interval.low),
        "high": number(interval.high),
        "confidence": interval.confidence,
        "resamples": interval.resamples,
        "seed": seed,
    }


def number(value) -> float | None:
    """A float for JSON: None for a missing value or NaN, which JSON cannot carry."""
    if value is None or math.isnan(value):
        return None
    return float(value)


def query_names(query_ids) -> dict[int, dict]:
    """The ``QueryRef`` of each query: its id, external id (or its id as text) and text.

    The ids come from a read of a result list's numbers that has already committed: a
    query missing now was deleted since (with its list or its project, as a deletion
    job does), so the answer is 404, as it would have been a moment later."""
    wanted = set(query_ids)
    rows = Query.objects.filter(pk__in=list(wanted)).values_list("pk", "external_id", "text")
    names = {pk: {"id": pk, "external_id": external_id or str(pk), "text": text}
             for pk, external_id, text in rows}  # fmt: skip
    if len(names) < len(wanted):
        raise NotFound(DELETED_MEANWHILE)
    return names


DELETED_MEANWHILE = (
    "The result list's queries were deleted while it was being read (the list or its "
    "project was deleted meanwhile)."
)


class QueryRefSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="The app's query id.")
    external_id = serializers.CharField(help_text=EXTERNAL_ID_HELP)
    text = serializers.CharField()


class ResultListRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    project = serializers.SlugField(help_text="The project's slug.")


def result_list_ref(result_list: ResultList) -> dict:
    return {"id": result_list.pk, "name": result_list.name, "project": result_list.project.slug}


def result_list_of(pk: int) -> ResultList:
    return get_object_or_404(ResultList.objects.select_related("project"), pk=pk)


def query_of(result_list: ResultList, query_id: int) -> Query:
    """A query of the list's project that the list returned hits for (404 otherwise)."""
    query = get_object_or_404(Query, pk=query_id, project_id=result_list.project_id)
    if not Hit.objects.filter(result_list=result_list, query=query).exists():
        raise NotFound(f"Result list {result_list.pk} returned no hit for query {query_id}.")
    return query


def paged(request, view, items: list) -> tuple[list, dict]:
    """One page of ``items`` (``page``, ``page_size``), and the count and links."""
    paginator = Pages()
    page = paginator.paginate_queryset(items, request, view=view)
    links = {
        "count": paginator.page.paginator.count,
        "next": paginator.get_next_link(),
        "previous": paginator.get_previous_link(),
    }
    return page, links


class PagedSerializer(serializers.Serializer):
    """The count and links of a page; subclasses add their ``results``."""

    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)


PAGE_PARAMETERS = [
    OpenApiParameter("page", OpenApiTypes.INT, description="Page number, from 1."),
    OpenApiParameter("page_size", OpenApiTypes.INT, description="Rows per page, at most 1000."),
]
