"""Projects, queries, documents and result lists: reading them, importing them."""

from django.db.models import Count
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from judgements import exporters, importers
from judgements.api.access import IsAnalyst, Pages
from judgements.api.filters import HitFilter
from judgements.api.projects import JOB_ACCEPTED, job_accepted, upload_run
from judgements.models import Document, Hit, Job, Project, Query, ResultList


class QueryListApi(generics.ListAPIView):
    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = Query
            fields = ["id", "external_id", "text", "description", "created_at"]

    queryset = Query.objects.none()  # for the schema; get_queryset() is used
    permission_classes = [IsAnalyst]
    serializer_class = OutputSerializer
    pagination_class = Pages
    filterset_fields = ["external_id"]

    def get_queryset(self):
        project = get_object_or_404(Project, slug=self.kwargs["slug"])
        return project.queries.order_by("id")


class DocumentListApi(generics.ListAPIView):
    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = Document
            fields = ["id", "external_id", "title", "url", "snippet", "image_url", "fields"]

    queryset = Document.objects.none()  # for the schema; get_queryset() is used
    permission_classes = [IsAnalyst]
    serializer_class = OutputSerializer
    pagination_class = Pages
    filterset_fields = ["external_id"]

    def get_queryset(self):
        project = get_object_or_404(Project, slug=self.kwargs["slug"])
        return Document.objects.filter(project=project).order_by("id")


class ResultListListApi(generics.ListAPIView):
    class OutputSerializer(serializers.ModelSerializer):
        hit_count = serializers.IntegerField()
        created_by = serializers.SlugRelatedField(
            slug_field="username", read_only=True, allow_null=True
        )

        class Meta:
            model = ResultList
            fields = ["id", "name", "engine", "captured_at", "created_at", "created_by"]
            fields += ["hit_count"]

    queryset = ResultList.objects.none()  # for the schema; get_queryset() is used
    permission_classes = [IsAnalyst]
    serializer_class = OutputSerializer
    pagination_class = Pages

    def get_queryset(self):
        project = get_object_or_404(Project, slug=self.kwargs["slug"])
        lists = project.result_lists.select_related("created_by")
        return lists.annotate(hit_count=Count("hits")).order_by("captured_at", "id")


class ResultListDetailApi(generics.RetrieveAPIView):
    permission_classes = [IsAnalyst]
    serializer_class = ResultListListApi.OutputSerializer
    queryset = ResultList.objects.select_related("created_by").annotate(hit_count=Count("hits"))


class HitListApi(generics.ListAPIView):
    """The ranked hits of a result list, by query then rank."""

    class OutputSerializer(serializers.ModelSerializer):
        query_text = serializers.CharField(source="query.text")
        query_external_id = serializers.CharField(source="query.external_id")
        external_id = serializers.CharField(source="document.external_id")

        class Meta:
            model = Hit
            fields = ["query", "query_external_id", "query_text", "rank", "document"]
            fields += ["external_id", "score"]

    queryset = Hit.objects.none()  # for the schema; get_queryset() is used
    permission_classes = [IsAnalyst]
    serializer_class = OutputSerializer
    pagination_class = Pages
    filterset_class = HitFilter

    def get_queryset(self):
        result_list = get_object_or_404(ResultList, pk=self.kwargs["pk"])
        hits = Hit.objects.filter(result_list=result_list).select_related("query", "document")
        return hits.order_by("query_id", "rank")


class ResultListExportApi(APIView):
    """The result list as a TREC run file (``qid Q0 docid rank score tag``), streamed."""

    permission_classes = [IsAnalyst]

    @extend_schema(responses={(200, "text/plain"): OpenApiTypes.BINARY})
    def get(self, request, pk):
        result_list = get_object_or_404(ResultList.objects.select_related("project"), pk=pk)
        return streamed(exporters.result_list_export(result_list=result_list))


def streamed(export: exporters.Export) -> StreamingHttpResponse:
    response = StreamingHttpResponse(export.chunks, content_type=export.content_type)
    response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
    return response


class ImportOutputSerializer(serializers.Serializer):
    rows = serializers.IntegerField(help_text="Rows read from the file.")
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    skipped = serializers.DictField(
        child=serializers.IntegerField(), help_text="Lines left out on purpose, by reason."
    )
    notes = serializers.ListField(
        child=serializers.CharField(), help_text="How the file was read; what was created."
    )


class QueryImportApi(APIView):
    """Add queries from a CSV or JSON file; all or nothing (see judgements.importers)."""

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField()
        format = serializers.ChoiceField(choices=sorted(importers.QUERY_FORMATS))

    permission_classes = [IsAnalyst]
    parser_classes = [MultiPartParser]

    @extend_schema(
        request=InputSerializer,
        responses={
            201: OpenApiResponse(ImportOutputSerializer, "Queries added."),
            202: JOB_ACCEPTED,
        },
    )
    def post(self, request, slug):
        project = get_object_or_404(Project, slug=slug)
        data = validated(self.InputSerializer, request.data)
        result = upload_run(request, project, Job.Kind.QUERIES, data)
        if isinstance(result, Job):
            return job_accepted(result)
        return Response(ImportOutputSerializer(result).data, status=status.HTTP_201_CREATED)


class DocumentImportApi(APIView):
    """Add or update documents (by external id) from a JSON Lines file; all or nothing."""

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField()

    permission_classes = [IsAnalyst]
    parser_classes = [MultiPartParser]

    @extend_schema(
        request=InputSerializer,
        responses={
            201: OpenApiResponse(ImportOutputSerializer, "Documents written."),
            202: JOB_ACCEPTED,
        },
    )
    def post(self, request, slug):
        project = get_object_or_404(Project, slug=slug)
        data = validated(self.InputSerializer, request.data)
        result = upload_run(request, project, Job.Kind.DOCUMENTS, data)
        if isinstance(result, Job):
            return job_accepted(result)
        return Response(ImportOutputSerializer(result).data, status=status.HTTP_201_CREATED)


class ResultListImportApi(APIView):
    """Create a result list from a TREC run file or JSON; all or nothing.

    A TREC run is ranked as trec_eval ranks it (score, then document id, both
    descending; the rank column is ignored); JSON keeps its list order. A ``qid`` is a
    query's external id, or the id ``queries`` (optional, a CSV with ``id,text``)
    gives it.
    """

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField()
        format = serializers.ChoiceField(choices=sorted(importers.RESULT_LIST_FORMATS))
        name = serializers.CharField(max_length=200, required=False, default="")
        engine = serializers.CharField(max_length=200, required=False, default="")
        captured_at = serializers.DateTimeField(required=False, default=None)
        queries = serializers.FileField(required=False, default=None)
        create_missing = serializers.BooleanField(
            required=False,
            default=False,
            help_text="Create queries (TREC qids) the project lacks.",
        )

    class OutputSerializer(ImportOutputSerializer):
        result_list = ResultListListApi.OutputSerializer()

    permission_classes = [IsAnalyst]
    parser_classes = [MultiPartParser]

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer, 202: JOB_ACCEPTED})
    def post(self, request, slug):
        project = get_object_or_404(Project, slug=slug)
        data = validated(self.InputSerializer, request.data)
        result = upload_run(request, project, Job.Kind.RESULT_LIST, data)
        if isinstance(result, Job):
            return job_accepted(result)
        result_list = ResultListDetailApi.queryset.get(pk=result.result_list.pk)
        output = {**ImportOutputSerializer(result).data, "result_list": result_list}
        return Response(self.OutputSerializer(output).data, status=status.HTTP_201_CREATED)


def validated(serializer_class, data) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
