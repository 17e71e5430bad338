"""The search log in the API: ingest a batch of events; read and export the online metrics.

Analysts and admins may use these; raters get 403 (judgements.api.access).
"""

import csv
import io
import math

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from config.ids import ApiIdField
from judgements.api.access import IsAnalyst
from judgements.api.catalogue import validated
from judgements.api.projects import JOB_ACCEPTED, job_accepted, upload_run
from judgements.models import Job, Project
from searchlogs import dashboards
from searchlogs.services import LOG_FORMATS, ORDINAL_BASES

GROUPINGS = {"day": ("day",), "query": ("query",), "day_query": ("day", "query")}


class SearchLogImportApi(APIView):
    """Store a batch of search events (this app's JSON Lines, see searchlogs.parsing, or
    User Behavior Insights records, see searchlogs.ubi); all or nothing.

    Events whose ``id`` the project already has are skipped, so a batch may be sent
    again safely. Every bad line is reported with its line number (and field).
    """

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField(help_text="The events: see format.")
        format = serializers.ChoiceField(
            choices=[(name, log.label) for name, log in LOG_FORMATS.items()],
            default="ours",
            help_text="ours: impression, click and dwell events as JSON Lines; ubi: UBI 1.3.0 "
            "ubi_queries and ubi_events records (NDJSON, a _bulk file or _search responses), "
            "each checked against UBI's published schemas.",
        )
        ordinal_base = serializers.ChoiceField(
            choices=ORDINAL_BASES,
            default=1,
            help_text="UBI only: the position.ordinal of a page's first hit (UBI's 1, or 0).",
        )

    class OutputSerializer(serializers.Serializer):
        rows = serializers.IntegerField(help_text="Events in the batch.")
        created = serializers.IntegerField(help_text="Events stored now.")
        already_stored = serializers.IntegerField(help_text="Events skipped: id already stored.")
        kinds = serializers.DictField(child=serializers.IntegerField())
        unmatched = serializers.IntegerField(help_text="Impressions matching no query.")
        unmatched_texts = serializers.ListField(
            child=serializers.ListField(),
            help_text="[normalised text, count], most frequent first.",
        )

    permission_classes = [IsAnalyst]
    parser_classes = [MultiPartParser]

    @extend_schema(
        request=InputSerializer,
        responses={
            201: OpenApiResponse(OutputSerializer, "The batch was stored."),
            202: JOB_ACCEPTED,
        },
    )
    def post(self, request, slug):
        project = get_object_or_404(Project, slug=slug)
        data = validated(self.InputSerializer, request.data)
        result = upload_run(request, project, Job.Kind.SEARCH_LOG, data)
        if isinstance(result, Job):
            return job_accepted(result)
        return Response(self.OutputSerializer(result).data, status=status.HTTP_201_CREATED)


class MetricsParams(serializers.Serializer):
    by = serializers.ChoiceField(choices=sorted(GROUPINGS), default="day")
    success_dwell = serializers.FloatField(
        required=False,
        default=None,
        min_value=0,
        max_value=86_400,
        help_text="Seconds of dwell for a successful click; default: the project's (10).",
    )

    query = ApiIdField(
        required=False, default=None, help_text="Only this query's rows (grouping by query)."
    )

    def validate_success_dwell(self, value):
        if value is not None and not math.isfinite(value):
            raise serializers.ValidationError("Must be a finite number of seconds.")
        return value


class SearchLogMetricsApi(APIView):
    """Click-through, successful sessions and time to success, per day and/or query.

    Definitions and edge cases: metrics.core.online. ``query`` is null for texts
    that matched no query of the project (and when not grouping by query).
    """

    class OutputSerializer(serializers.Serializer):
        class RowSerializer(serializers.Serializer):
            day = serializers.DateField(allow_null=True)
            query = serializers.IntegerField(allow_null=True)
            impressions = serializers.IntegerField()
            clicks = serializers.IntegerField()
            ctr = serializers.FloatField(allow_null=True)
            sessions = serializers.IntegerField()
            successful_sessions = serializers.IntegerField()
            success_rate = serializers.FloatField(allow_null=True)
            zero_click_successes = serializers.IntegerField()
            seconds_to_success = serializers.FloatField(allow_null=True)
            queries_to_success = serializers.FloatField(allow_null=True)
            queries_per_session = serializers.FloatField(allow_null=True)
            orphan_clicks = serializers.IntegerField()

        success_dwell = serializers.FloatField()
        by = serializers.CharField()
        results = RowSerializer(many=True)

    permission_classes = [IsAnalyst]

    @extend_schema(parameters=[MetricsParams], responses={200: OutputSerializer})
    def get(self, request, slug):
        _, params, rows, dwell = _metrics(request, slug)
        body = {"success_dwell": dwell, "by": params["by"], "results": [r.as_dict() for r in rows]}
        return Response(self.OutputSerializer(body).data)


class SearchLogMetricsExportApi(APIView):
    """The same figures as CSV, one row per group."""

    permission_classes = [IsAnalyst]

    @extend_schema(parameters=[MetricsParams], responses={(200, "text/csv"): OpenApiTypes.BINARY})
    def get(self, request, slug):
        project, params, rows, dwell = _metrics(request, slug)
        response = HttpResponse(_csv(rows, dwell), content_type="text/csv")
        filename = f"{project.slug}-online-by-{params['by']}.csv"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


def _metrics(request, slug):
    project = get_object_or_404(Project, slug=slug)
    params = validated(MetricsParams, request.query_params)
    rows, dwell = dashboards.online_metrics_of(
        project, by=GROUPINGS[params["by"]], success_dwell=params["success_dwell"]
    )
    if params["query"] is not None:
        rows = [row for row in rows if row.query_id == params["query"]]
    return project, params, rows, dwell


def _csv(rows, dwell: float) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["day", "query", *dashboards.COLUMNS, "success_dwell"])
    for row in rows:
        values = row.as_dict()
        cells = [values["day"] or "", "" if values["query"] is None else values["query"]]
        cells += ["" if values[name] is None else values[name] for name in dashboards.COLUMNS]
        writer.writerow([*cells, dwell])
    return out.getvalue()
