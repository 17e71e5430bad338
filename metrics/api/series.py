"""The stored series of a result list and of one of its queries (JSON or CSV), and one
query's NDCG working, rank by rank. See metrics.api.views for the conventions."""

import csv
import io

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from judgements.api.access import IsAnalyst
from metrics import dashboards
from metrics.api.common import (
    PAGE_PARAMETERS,
    SOURCES,
    MetricSpecSerializer,
    PagedSerializer,
    QueryRefSerializer,
    ResultListRefSerializer,
    form_parameters,
    paged,
    query_names,
    query_of,
    result_list_of,
    result_list_ref,
    spec_data,
    valid,
)
from metrics.dashboards.series import LIST_COLUMNS, QUERY_COLUMNS, stored_series
from metrics.forms import MetricForm, SeriesForm
from metrics.registry import stored_specs
from metrics.sources import GRADES_HELP, GRADES_LABELS, SOURCE_HELP, Source

# Where a series' points come from, as both series endpoints answer it.
SERIES_SOURCE_HELP = (
    "'stored' for the human raters' grades; 'log' for other grades, whose points are "
    "replayed from the log at each day's end."
)


class ResultListSeriesApi(APIView):
    """The stored series of the list's mean over queries: one point per moment the
    series was refreshed or rebuilt, oldest first, as JSON (paged) or CSV (whole).

    Only metrics the project keeps (its default metric, now or earlier) have a series;
    ``kept`` says whether the spec asked for is kept now.
    """

    class OutputSerializer(PagedSerializer):
        class PointSerializer(serializers.Serializer):
            as_of = serializers.DateTimeField()
            value = serializers.FloatField(
                allow_null=True, help_text="The mean over the queries that count; null for none."
            )
            queries = serializers.IntegerField()
            zero_idcg = serializers.IntegerField()
            judged = serializers.IntegerField()
            retrieved = serializers.IntegerField()
            coverage = serializers.FloatField(allow_null=True)
            judgements = serializers.IntegerField(help_text="Current grades counted.")
            ci_low = serializers.FloatField(allow_null=True)
            ci_high = serializers.FloatField(allow_null=True)
            ci_confidence = serializers.FloatField(allow_null=True)
            ci_resamples = serializers.IntegerField(allow_null=True)
            ci_seed = serializers.IntegerField(allow_null=True)
            ci_pending = serializers.BooleanField(
                required=False,
                help_text="The interval is of the queries' values before the last grades "
                "(the mean and counts are current); a task is drawing it again.",
            )
            computed_at = serializers.DateTimeField()

        result_list = ResultListRefSerializer()
        spec = MetricSpecSerializer()
        kept = serializers.BooleanField(help_text="Whether the project keeps this series now.")
        source = serializers.ChoiceField(choices=SOURCES, help_text=SERIES_SOURCE_HELP)
        grades = serializers.ChoiceField(choices=list(GRADES_LABELS), help_text=GRADES_HELP)
        results = PointSerializer(many=True)

    permission_classes = [IsAnalyst]
    columns = LIST_COLUMNS

    @extend_schema(
        parameters=[*form_parameters(SeriesForm), *PAGE_PARAMETERS],
        responses={200: OutputSerializer, (200, "text/csv"): OpenApiTypes.BINARY},
    )
    def get(self, request, pk, query_id=None):
        result_list = result_list_of(pk)
        query = None if query_id is None else query_of(result_list, query_id)
        form = valid(SeriesForm(request.query_params, project=result_list.project))
        since, until = form.cleaned_data["since"], form.moment
        grades = form.chosen_grades
        points = stored_series(
            result_list, form.spec, query=query, since=since, until=until, grades=grades
        )
        if form.cleaned_data["format"] == "csv":
            columns = [*self.columns, "coverage"]
            return _csv_response(points, columns, _filename(result_list, query))
        page, links = paged(request, self, points)
        body = {
            "result_list": result_list_ref(result_list),
            "spec": spec_data(form.spec),
            "kept": form.spec in stored_specs(result_list.project),
            "source": Source.STORED if grades.human_only else Source.LOG,
            "grades": grades.name,
            **({"query": query_names([query.pk])[query.pk]} if query else {}),
            **links,
            "results": page,
        }
        return Response(body)


class QuerySeriesApi(ResultListSeriesApi):
    """The stored series of one query in the result list: its NDCG, DCG, IDCG and
    coverage at every moment the series was refreshed or rebuilt, as JSON or CSV."""

    class OutputSerializer(PagedSerializer):
        class PointSerializer(serializers.Serializer):
            as_of = serializers.DateTimeField()
            value = serializers.FloatField(help_text="The query's NDCG.")
            dcg = serializers.FloatField(allow_null=True)
            idcg = serializers.FloatField(allow_null=True)
            judged = serializers.IntegerField()
            retrieved = serializers.IntegerField()
            coverage = serializers.FloatField(allow_null=True)
            judgements = serializers.IntegerField(help_text="Current grades counted.")
            computed_at = serializers.DateTimeField()

        result_list = ResultListRefSerializer()
        query = QueryRefSerializer()
        spec = MetricSpecSerializer()
        kept = serializers.BooleanField(help_text="Whether the project keeps this series now.")
        source = serializers.ChoiceField(choices=SOURCES, help_text=SERIES_SOURCE_HELP)
        grades = serializers.ChoiceField(choices=list(GRADES_LABELS), help_text=GRADES_HELP)
        results = PointSerializer(many=True)

    columns = QUERY_COLUMNS

    @extend_schema(
        parameters=[*form_parameters(SeriesForm), *PAGE_PARAMETERS],
        responses={200: OutputSerializer, (200, "text/csv"): OpenApiTypes.BINARY},
    )
    def get(self, request, pk, query_id):
        return super().get(request, pk, query_id)


def _filename(result_list, query) -> str:
    scope = f"-query-{query.pk}" if query is not None else ""
    return f"{result_list.project.slug}-{result_list.pk}{scope}-series.csv"


def _csv_response(rows: list[dict], columns: list[str], filename: str) -> HttpResponse:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if row[name] is None else _cell(row[name]) for name in columns])
    response = HttpResponse(out.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _cell(value):
    return value.isoformat() if hasattr(value, "isoformat") else value


class BoundsOutputSerializer(serializers.Serializer):
    low = serializers.FloatField()
    high = serializers.FloatField()


class QueryWorkingApi(APIView):
    """NDCG's working for one query of the result list, rank by rank, as on the query
    page: each hit's consensus grade, gain and discount, the cumulative DCG, the ideal
    grade and IDCG at that rank, and NDCG down to it. Always computed from the grades.
    """

    class OutputSerializer(serializers.Serializer):
        class RowSerializer(serializers.Serializer):
            class DocumentSerializer(serializers.Serializer):
                id = serializers.IntegerField()
                external_id = serializers.CharField()
                title = serializers.CharField()

            rank = serializers.IntegerField()
            document = DocumentSerializer(allow_null=True, help_text="Null past the hits.")
            returned = serializers.BooleanField(help_text="Whether a hit sits at this rank.")
            grade = serializers.FloatField(allow_null=True, help_text="Null: unjudged.")
            gain = serializers.FloatField()
            discount = serializers.FloatField(help_text="The weight the gain is multiplied by.")
            discounted_gain = serializers.FloatField()
            dcg = serializers.FloatField(help_text="Cumulative, down to this rank.")
            ideal_grade = serializers.FloatField(allow_null=True)
            ideal_gain = serializers.FloatField()
            idcg = serializers.FloatField(help_text="Cumulative, down to this rank.")
            ndcg = serializers.FloatField(help_text="NDCG down to this rank.")

        result_list = ResultListRefSerializer()
        query = QueryRefSerializer()
        spec = MetricSpecSerializer()
        as_of = serializers.DateTimeField()
        source = serializers.ChoiceField(
            choices=SOURCES,
            help_text=f"{SOURCE_HELP} The working is computed from the pair grades: 'pairs' "
            "or 'log'.",
        )
        grades = serializers.ChoiceField(choices=list(GRADES_LABELS), help_text=GRADES_HELP)
        ndcg = serializers.FloatField()
        dcg = serializers.FloatField()
        idcg = serializers.FloatField()
        judged = serializers.IntegerField(help_text="Judged hits within the cut-off.")
        retrieved = serializers.IntegerField(help_text="Hits within the cut-off.")
        judged_not_returned = serializers.IntegerField()
        relevant_not_returned = serializers.IntegerField()
        unjudged_in_top_k = serializers.IntegerField(help_text="Hits within the cut-off "
                                                     "without a grade.")  # fmt: skip
        queued = serializers.IntegerField(help_text="Of those, pairs in the raters' queue.")
        bounds = BoundsOutputSerializer(
            help_text="The lowest and highest NDCG over every grade the query's unjudged hits "
            "(and the queue's other unjudged documents of the query) could get, the ideal "
            "recomputed with them; low = high = ndcg when every hit is judged."
        )
        rows = RowSerializer(many=True)

    permission_classes = [IsAnalyst]

    @extend_schema(parameters=form_parameters(MetricForm), responses={200: OutputSerializer})
    def get(self, request, pk, query_id):
        result_list = result_list_of(pk)
        query = query_of(result_list, query_id)
        project = result_list.project
        form = valid(MetricForm(request.query_params, project=project))
        grades = form.chosen_grades
        detail = dashboards.query_detail(
            project, result_list, query, form.spec, as_of=form.moment, grades=grades
        )
        result = detail.result
        body = {
            "result_list": result_list_ref(result_list),
            "query": query_names([query.pk])[query.pk],
            "spec": spec_data(form.spec),
            "as_of": detail.as_of,
            "source": detail.source,
            "grades": grades.name,
            "ndcg": result.ndcg,
            "dcg": result.dcg,
            "idcg": result.idcg,
            "judged": result.judged,
            "retrieved": result.retrieved,
            "judged_not_returned": detail.judged_not_returned,
            "relevant_not_returned": detail.relevant_not_returned,
            "unjudged_in_top_k": detail.open.unjudged if detail.open else 0,
            "queued": detail.open.queued if detail.open else 0,
            "bounds": (
                {"low": detail.open.bounds.low, "high": detail.open.bounds.high}
                if detail.open
                else {"low": result.ndcg, "high": result.ndcg}
            ),
            "rows": [_working_row(working) for working in detail.working],
        }
        return Response(body)


def _working_row(working) -> dict:
    row, document = working.row, working.document
    return {
        "rank": row.rank,
        "document": document and {
            "id": document.pk, "external_id": document.external_id, "title": document.title
        },
        "returned": row.returned,
        "grade": row.grade,
        "gain": row.gain,
        "discount": row.discount,
        "discounted_gain": row.discounted_gain,
        "dcg": row.dcg,
        "ideal_grade": row.ideal_grade,
        "ideal_gain": row.ideal_gain,
        "idcg": row.idcg,
        "ndcg": row.ndcg_at,
    }  # fmt: skip
