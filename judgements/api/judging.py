"""The judgement log, current grades, consensus, a rater's queue, imports and exports."""

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, generics, serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from config.ids import ApiIdField
from judgements import exporters, importers, queue, services
from judgements.api.access import (
    NOT_RATEABLE,
    IsAnalyst,
    IsRater,
    LogPages,
    Pages,
    project_to_rate,
)
from judgements.api.catalogue import ImportOutputSerializer, streamed, validated
from judgements.api.filters import JudgementFilter, filter_parameters
from judgements.api.projects import JOB_ACCEPTED, job_accepted, upload_run
from judgements.models import Document, Job, Judgement, Project, Query
from metrics.core.consensus import policy_names


class JudgementOutputSerializer(serializers.ModelSerializer):
    query_text = serializers.CharField(source="query.text")
    query_external_id = serializers.CharField(source="query.external_id")
    external_id = serializers.CharField(source="document.external_id")
    rater = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Judgement
        fields = [
            "id", "query", "query_external_id", "query_text", "document", "external_id",
            "rater", "kind", "grade", "note", "created_at", "source", "import_id",
        ]  # fmt: skip


class JudgementListApi(generics.ListAPIView):
    """The judgement log, oldest first, with a cursor. A rater sees only their own events."""

    permission_classes = [IsRater]
    serializer_class = JudgementOutputSerializer
    pagination_class = LogPages
    filterset_class = JudgementFilter

    def get_queryset(self):
        events = Judgement.objects.visible_to(self.request.user)
        return events.select_related("query", "document", "rater")


class PairCompleteError(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "pair_complete"


COMPLETE_RESPONSE = OpenApiResponse(
    description="The pair already has the grades it needs from other raters, as the queue "
    "counts them (judges_per_pair, live leases included); ask /next/ for another pair."
)


class JudgementCreateApi(APIView):
    """Record an answer to a pair as the signed-in rater, with ``source=api``.

    Each post is one event (judgements are never overwritten): a grade, "can't tell"
    (``kind=cant_tell``, no grade) or a retraction. The pair must be one of the
    project's hits and the rater allowed on the project (404 otherwise, as for an
    unknown project). The query is given by id, or by ``project`` and
    ``query_external_id`` (the team's own qid). A pair that already has its
    ``judges_per_pair`` grades from other raters, counting their live leases as the
    queue does, is 409; a rater may always change or retract their own answer.
    """

    class InputSerializer(serializers.Serializer):
        query = serializers.PrimaryKeyRelatedField(
            queryset=Query.objects.select_related("project"), pk_field=ApiIdField(), required=False
        )
        project = serializers.SlugField(required=False, help_text="With query_external_id.")
        query_external_id = serializers.CharField(required=False, max_length=200)
        document = serializers.PrimaryKeyRelatedField(
            queryset=Document.objects.all(), pk_field=ApiIdField()
        )
        kind = serializers.ChoiceField(choices=Judgement.Kind.choices, default="grade")
        grade = serializers.IntegerField(
            required=False, allow_null=True, default=None, min_value=-32768, max_value=32767
        )
        note = serializers.CharField(
            required=False, allow_blank=True, default="", max_length=10_000
        )

        def validate(self, data):
            if "query" not in data and not (data.get("project") and data.get("query_external_id")):
                message = "Give query, or project and query_external_id."
                raise serializers.ValidationError({"query": message})
            return data

    permission_classes = [IsRater]

    @extend_schema(
        request=InputSerializer,
        responses={201: JudgementOutputSerializer, 409: COMPLETE_RESPONSE},
    )
    def post(self, request):
        data = validated(self.InputSerializer, request.data)
        slug, external_id = data.pop("project", None), data.pop("query_external_id", None)
        if "query" in data:
            project = data["query"].project  # judgement_submit checks the rater's access
        else:
            # The rater's access is checked before the external id is looked up, so that
            # nobody learns which ids a project they may not rate has.
            project = project_to_rate(request.user, slug)
            data["query"] = _query_by_external_id(project, external_id)
        try:
            judgement, _ = services.judgement_submit(
                rater=request.user,
                project=project,
                source=Judgement.Source.API,
                deduplicate=False,
                **data,
            )
        except services.NotRateable:
            raise exceptions.NotFound(NOT_RATEABLE) from None
        except services.PairComplete as complete:
            raise PairCompleteError(complete.messages[0]) from None
        return Response(JudgementOutputSerializer(judgement).data, status.HTTP_201_CREATED)


def _query_by_external_id(project, external_id: str) -> Query:
    query = project.queries.filter(external_id=external_id).first()
    if query is None:
        message = f'No query of "{project.slug}" has that external id.'
        raise serializers.ValidationError({"query_external_id": [message]})
    return query


class NextPairApi(APIView):
    """The next pair for the signed-in rater, leased to them for a few minutes.

    Asking again before answering returns the same pair. 204 when the queue is empty.
    """

    class OutputSerializer(serializers.Serializer):
        class QuerySerializer(serializers.Serializer):
            id = serializers.IntegerField()
            text = serializers.CharField()
            description = serializers.CharField()

        class DocumentSerializer(serializers.ModelSerializer):
            class Meta:
                model = Document
                fields = ["id", "external_id", "title", "url", "snippet", "image_url", "fields"]

        project = serializers.CharField(source="project.slug")
        query = QuerySerializer()
        document = DocumentSerializer()
        best_rank = serializers.IntegerField()
        scale = serializers.JSONField(source="project.scale")

    permission_classes = [IsRater]

    @extend_schema(responses={200: OutputSerializer, 204: OpenApiResponse(description="Done.")})
    def get(self, request, slug):
        project = project_to_rate(request.user, slug)
        pair = queue.queue_next_pair(rater=request.user, project=project)
        if pair is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(self.OutputSerializer(pair).data)


class GradeListApi(generics.ListAPIView):
    """Each rater's current grade per pair of the project (from the filtered events)."""

    class OutputSerializer(serializers.ModelSerializer):
        rater = serializers.SlugRelatedField(slug_field="username", read_only=True)
        external_id = serializers.CharField(source="document.external_id")

        class Meta:
            model = Judgement
            fields = ["query", "document", "external_id", "rater", "grade", "created_at"]

    queryset = Judgement.objects.none()  # for the schema; get_queryset() is used
    permission_classes = [IsAnalyst]
    serializer_class = OutputSerializer
    pagination_class = Pages
    filterset_class = JudgementFilter

    def get_queryset(self):
        project = get_object_or_404(Project, slug=self.kwargs["slug"])
        return Judgement.objects.for_project(project)

    def filter_queryset(self, queryset):
        grades = super().filter_queryset(queryset).current_grades()
        return grades.select_related("document", "rater").order_by(
            "query_id", "document_id", "rater_id"
        )


POLICY = OpenApiParameter("policy", enum=policy_names(), description="Default: the project's.")


@extend_schema(parameters=[POLICY])
class ConsensusListApi(generics.ListAPIView):
    """The consensus grade of every judged pair, from the raters' current grades."""

    class OutputSerializer(serializers.Serializer):
        query = serializers.IntegerField(source="query_id")
        document = serializers.IntegerField(source="document_id")
        consensus = serializers.FloatField()
        raters = serializers.IntegerField()
        min_grade = serializers.IntegerField()
        max_grade = serializers.IntegerField()
        spread = serializers.FloatField(allow_null=True)

    queryset = Judgement.objects.none()  # for the schema; get_queryset() is used
    permission_classes = [IsAnalyst]
    serializer_class = OutputSerializer
    pagination_class = Pages
    filterset_class = JudgementFilter

    def get_queryset(self):
        self.project = get_object_or_404(Project, slug=self.kwargs["slug"])
        return Judgement.objects.for_project(self.project)

    def filter_queryset(self, queryset):
        params = validated(ExportParams, self.request.query_params)
        events = super().filter_queryset(queryset)
        return events.consensus(params["policy"] or self.project.consensus)


class PolicyField(serializers.ChoiceField):
    """A consensus policy of metrics.core.consensus, as registered when the field is made
    (DRF makes a serializer's fields anew for each instance)."""

    def __init__(self, **kwargs):
        super().__init__(choices=policy_names(), **kwargs)


# RRE is one JSON document; the other formats are lines of text.
EXPORT_BODY = {"application/json": OpenApiTypes.OBJECT}


class ExportParams(serializers.Serializer):
    format = serializers.ChoiceField(choices=exporters.FORMATS, default="jsonl")
    policy = PolicyField(required=False, default="")
    raw = serializers.BooleanField(
        required=False,
        default=False,
        help_text="CSV cells as stored, without the ' that keeps spreadsheets from running "
        "cells starting with = + - @ as formulas.",
    )


class JudgementExportApi(APIView):
    """The project's judgement events, streamed in one of several formats.

    See judgements.exporters for the formats. Filters are those of the judgement log.
    """

    dataset = "events"
    permission_classes = [IsAnalyst]

    @extend_schema(
        parameters=[
            OpenApiParameter("format", enum=exporters.FORMATS, description="Default: jsonl."),
            POLICY,
            OpenApiParameter("raw", bool, description="CSV cells without the formula guard."),
            *filter_parameters(JudgementFilter),
        ],
        responses={
            (200, content_type): EXPORT_BODY.get(content_type, OpenApiTypes.BINARY)
            for content_type in sorted(set(exporters.CONTENT_TYPES.values()))
        },
    )
    def get(self, request, slug):
        project = get_object_or_404(Project, slug=slug)
        params = validated(ExportParams, request.query_params)
        events = JudgementFilter(request.query_params, Judgement.objects.for_project(project))
        if not events.is_valid():
            raise serializers.ValidationError(events.errors)
        export = exporters.judgement_export(
            project=project,
            events=events.qs,
            dataset=self.dataset,
            file_format=params["format"],
            policy=params["policy"],
            raw=params["raw"],
        )
        return streamed(export)


class GradeExportApi(JudgementExportApi):
    """Each rater's current grade per pair, streamed; filters apply to the events first."""

    dataset = "grades"


class ConsensusExportApi(JudgementExportApi):
    """The consensus grade per pair, streamed; pair formats round it to a grade.

    Pair formats (qrels, quepid, rre, ltr, opensearch) write this from every dataset.
    """

    dataset = "consensus"


class JudgementImportApi(APIView):
    """Append judgements from another tool's file as ``source=import`` events; all or nothing.

    Quepid CSV, qrels, RRE, LTR and OpenSearch grades go to the project's import rater
    (``import.<slug>``); event files (``jsonl``, ``csv``) keep their raters and times
    (an event imported before is skipped); a Quepid book's judgements go to rater
    accounts matched or created by e-mail, its anonymous ones to the import rater and
    its AI judges' ("user_email": null) to machine judge "Quepid AI judge", as
    ``source=machine`` events. ``queries`` (optional, for qrels) is a CSV
    with ``id,text`` naming each ``qid``; without it a qid is a query's external id.
    ``create_missing`` creates the documents (and qrels queries) the project lacks.
    """

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField()
        format = serializers.ChoiceField(choices=sorted(importers.JUDGEMENT_FORMATS))
        queries = serializers.FileField(required=False, default=None)
        create_missing = serializers.BooleanField(required=False, default=False)

    class OutputSerializer(ImportOutputSerializer):
        import_id = serializers.UUIDField()
        rater = serializers.CharField(help_text="The import rater, for pair formats.")

    permission_classes = [IsAnalyst]
    parser_classes = [MultiPartParser]

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer, 202: JOB_ACCEPTED})
    def post(self, request, slug):
        project = get_object_or_404(Project, slug=slug)
        data = validated(self.InputSerializer, request.data)
        result = upload_run(request, project, Job.Kind.JUDGEMENTS, data)
        if isinstance(result, Job):
            return job_accepted(result)
        return Response(self.OutputSerializer(result).data, status=status.HTTP_201_CREATED)
