"""The search engines' API: endpoints, template versions, captures and tries, schedules
and one query live. Analysts (and admins) only; a secret is write-only."""

from django.core.exceptions import ValidationError
from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from judgements import bulk
from judgements.api.access import IsAnalyst
from judgements.engines import schedules, services, tries
from judgements.engines.capture import capture_start
from judgements.engines.live import live_query
from judgements.models import Capture, CaptureSchedule, Project, ResultList, SearchEndpoint
from metrics.dashboards.compare import comparison_gate


class EndpointSerializer(serializers.ModelSerializer):
    secret = serializers.CharField(write_only=True, required=False, allow_blank=True)
    template = serializers.CharField(write_only=True, required=False)
    has_secret = serializers.BooleanField(read_only=True)

    class Meta:
        model = SearchEndpoint
        fields = ["id", "name", *services.ENDPOINT_FIELDS[1:], "current_version"]
        fields += ["has_secret", "secret", "template", "created_at"]
        read_only_fields = ["current_version", "created_at"]

    def validate(self, attrs):
        # The model's rules are the service's to apply, with the secret and template.
        return attrs


class EndpointListApi(generics.ListCreateAPIView):
    """A project's search endpoints; ``POST`` creates one with its first template."""

    permission_classes = [IsAnalyst]
    serializer_class = EndpointSerializer
    queryset = SearchEndpoint.objects.none()  # for the schema; get_queryset() is used
    filterset_fields = ["name"]

    def get_queryset(self):
        project = get_object_or_404(Project, slug=self.kwargs["slug"])
        return project.search_endpoints.order_by("name")

    def perform_create(self, serializer):
        project = get_object_or_404(Project, slug=self.kwargs["slug"])
        data = dict(serializer.validated_data)
        if "template" not in data:
            raise ValidationError({"template": ["A request template is required."]})
        serializer.instance = services.endpoint_create(
            project=project, user=self.request.user, **data
        )


class EndpointDetailApi(generics.RetrieveUpdateDestroyAPIView):
    permission_classes = [IsAnalyst]
    serializer_class = EndpointSerializer
    queryset = SearchEndpoint.objects.all()

    def perform_update(self, serializer):
        data = dict(serializer.validated_data)
        data.pop("template", None)
        services.endpoint_update(endpoint=serializer.instance, **data)


class TemplateSaveApi(APIView):
    """Save a template version (an existing version with the same text is reused);
    ``current`` makes captures and schedules send it."""

    class InputSerializer(serializers.Serializer):
        body = serializers.CharField()
        note = serializers.CharField(required=False, default="", max_length=200)
        current = serializers.BooleanField(required=False, default=False)

    class OutputSerializer(serializers.Serializer):
        version = serializers.IntegerField()
        body = serializers.CharField()
        note = serializers.CharField()
        created_at = serializers.DateTimeField()

    permission_classes = [IsAnalyst]

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer})
    def post(self, request, pk):
        endpoint = get_object_or_404(SearchEndpoint, pk=pk)
        data = _valid(self.InputSerializer, request.data)
        template = services.template_save(endpoint=endpoint, user=request.user, **data)
        return Response(self.OutputSerializer(template).data, status=status.HTTP_201_CREATED)


class CaptureSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    version = serializers.IntegerField(source="template.version")
    percent = serializers.IntegerField(allow_null=True)

    class Meta:
        model = Capture
        fields = ["id", "url", "endpoint", "kind", "name", "version", "status", "percent"]
        fields += ["total", "done", "failed", "failures", "error", "notes", "result_list"]
        fields += ["baseline", "judge", "created_at", "started_at", "finished_at"]

    def get_url(self, capture) -> str:
        return self.context["request"].build_absolute_uri(f"/api/captures/{capture.pk}/")


class CaptureStartApi(APIView):
    """Capture a result list (``kind=capture``), or run a try (``try``, ``gate``) whose
    ranking is kept out of the raters' pool until kept. Answers 202: poll ``url``.

    ``template`` (text) sends that template (saved as a version) instead of the
    current one; ``queries`` limits it to those external ids (or texts). A ``gate``
    try with ``replace`` replaces the project's gate candidate of the same name."""

    class InputSerializer(serializers.Serializer):
        kind = serializers.ChoiceField(choices=["capture", "try", "gate"], default="capture")
        name = serializers.CharField(required=False, default="", max_length=200)
        template = serializers.CharField(required=False, default="")
        version = serializers.IntegerField(required=False, min_value=1)
        baseline = serializers.IntegerField(required=False, allow_null=True, default=None)
        queries = serializers.ListField(child=serializers.CharField(), required=False)
        judge = serializers.BooleanField(required=False, default=False)
        replace = serializers.BooleanField(required=False, default=False)

    permission_classes = [IsAnalyst]

    @extend_schema(
        request=InputSerializer,
        responses={202: OpenApiResponse(CaptureSerializer, "Accepted: poll its url.")},
    )
    def post(self, request, pk):
        endpoint = get_object_or_404(SearchEndpoint.objects.select_related("project"), pk=pk)
        data = _valid(self.InputSerializer, request.data)
        project = endpoint.project
        kind = Capture.Kind.MANUAL if data["kind"] == "capture" else data["kind"]
        with transaction.atomic():
            if kind == Capture.Kind.GATE and data["replace"] and data["name"]:
                gate_candidate_delete(project=project, name=data["name"])
            capture = capture_start(
                endpoint=endpoint,
                user=request.user,
                kind=kind,
                name=data["name"],
                template=_template(endpoint, data, request.user),
                query_ids=services.query_ids_named(project, "\n".join(data.get("queries", []))),
                baseline=_baseline(project, data["baseline"]),
                judge=data["judge"],
            )
        capture.refresh_from_db()
        body = CaptureSerializer(capture, context={"request": request}).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})


def _template(endpoint, data, user):
    if data["template"]:
        return services.template_save(endpoint=endpoint, body=data["template"], user=user)
    if "version" in data:
        found = endpoint.templates.filter(version=data["version"]).first()
        if found is None:
            raise ValidationError({"version": [f"The endpoint has no version {data['version']}."]})
        return found
    return None


def _baseline(project, pk):
    if pk is None:
        return None
    found = project.result_lists.filter(pk=pk).first()
    if found is None:
        raise ValidationError({"baseline": [f"The project has no result list {pk}."]})
    return found


def gate_candidate_delete(*, project: Project, name: str) -> int:
    """Delete the project's gate candidates named ``name`` and the result lists the
    gate kept of them; returns how many candidates went."""
    candidates = Capture.objects.filter(
        endpoint__project=project, kind=Capture.Kind.GATE, name=name
    ).select_for_update()
    count = 0
    for candidate in candidates:
        if candidate.result_list_id is not None:
            bulk.result_list_delete_fast(candidate.result_list_id)
        candidate.delete()
        count += 1
    return count


class CaptureDetailApi(APIView):
    """A capture's (or try's) progress and outcome; a finished try adds its ``report``
    (NDCG per query against the baseline, unjudged hits) and, with ``max_drop``, the
    ``gate`` the comparison page's rule gives. ``DELETE`` removes a try or a gate
    candidate (with the result list the gate kept of it)."""

    permission_classes = [IsAnalyst]

    @extend_schema(responses={200: CaptureSerializer})
    def get(self, request, pk):
        capture = _capture(pk)
        body = CaptureSerializer(capture, context={"request": request}).data
        if capture.is_try and capture.status == Capture.Status.DONE and capture.ranking:
            report = tries.try_evaluate(capture)
            body["report"] = _report(report)
            if "max_drop" in request.query_params:
                max_drop = _float(request.query_params["max_drop"])
                gate = comparison_gate(report, report.spec, max_drop=max_drop)
                if report.baseline is None:
                    gate = gate.__class__(max_drop, False, "The try has no baseline to compare.")
                body["gate"] = {
                    "max_drop": gate.max_drop,
                    "passed": gate.passed,
                    "reason": gate.reason,
                }
        return Response(body)

    @extend_schema(responses={204: None})
    def delete(self, request, pk):
        capture = _capture(pk)
        if not capture.is_try:
            raise ValidationError(
                "Only tries and gate candidates are deleted here; delete a captured result "
                "list on its own page."
            )
        with transaction.atomic():
            if capture.kind == Capture.Kind.GATE and capture.result_list_id is not None:
                bulk.result_list_delete_fast(capture.result_list_id)
            capture.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


def _capture(pk) -> Capture:
    return get_object_or_404(
        Capture.objects.select_related("endpoint__project", "template", "baseline"), pk=pk
    )


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValidationError({"max_drop": ["A number, e.g. 0.01."]}) from None
    if not value >= 0:
        raise ValidationError({"max_drop": ["Zero or more."]})
    return value


def _report(report: tries.TryReport) -> dict:
    keys = dict(report.capture.endpoint.project.queries.values_list("id", "external_id"))
    return {
        "metric": report.spec.name,
        "source": str(report.source),
        "mean": report.mean,
        "queries": report.evaluation.queries,
        "baseline": report.capture.baseline_id,
        "baseline_mean": report.mean_baseline,
        "mean_in_common": report.mean_paired,
        "difference": report.difference,
        "queries_in_common": report.queries,
        "wins": report.wins,
        "ties": report.ties,
        "losses": report.losses,
        "p_value": report.p_value,
        "unjudged": report.unjudged,
        "per_query": [
            {
                "query": row.text,
                "query_external_id": keys.get(row.query_id) or str(row.query_id),
                "value": row.value,
                "baseline": row.baseline,
                "delta": row.delta,
                "unjudged": row.unjudged,
            }
            for row in report.rows
        ],
    }


class CaptureKeepApi(APIView):
    """Keep a try as a result list: its hits within the pool depth join the queue."""

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(required=False, default="", max_length=200)

    permission_classes = [IsAnalyst]

    @extend_schema(request=InputSerializer, responses={201: CaptureSerializer})
    def post(self, request, pk):
        capture = _capture(pk)
        data = _valid(self.InputSerializer, request.data)
        tries.try_keep(capture=capture, name=data["name"])
        capture.refresh_from_db()
        body = CaptureSerializer(capture, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED)


class ScheduleSerializer(serializers.ModelSerializer):
    every = serializers.ChoiceField(
        choices=["daily", "weekly", "cron"], write_only=True, default="cron"
    )

    class Meta:
        model = CaptureSchedule
        fields = ["id", "endpoint", "every", "expression", "paused", "next_run_at", "created_at"]
        read_only_fields = ["endpoint", "next_run_at", "created_at"]
        extra_kwargs = {"expression": {"required": False, "default": ""}}


class ScheduleListApi(generics.ListCreateAPIView):
    """An endpoint's capture schedules (cron expressions in UTC)."""

    permission_classes = [IsAnalyst]
    serializer_class = ScheduleSerializer
    queryset = CaptureSchedule.objects.none()  # for the schema; get_queryset() is used

    def get_queryset(self):
        return CaptureSchedule.objects.filter(endpoint_id=self.kwargs["pk"])

    def perform_create(self, serializer):
        endpoint = get_object_or_404(SearchEndpoint, pk=self.kwargs["pk"])
        data = serializer.validated_data
        expression = schedules.expression_of(data["every"], data.get("expression", ""))
        serializer.instance = schedules.schedule_create(
            endpoint=endpoint, expression=expression, user=self.request.user
        )


class ScheduleDetailApi(generics.RetrieveUpdateDestroyAPIView):
    """``PATCH {"paused": true}`` pauses a schedule, ``false`` resumes it."""

    permission_classes = [IsAnalyst]
    serializer_class = ScheduleSerializer
    queryset = CaptureSchedule.objects.all()

    def perform_update(self, serializer):
        schedule = serializer.instance
        paused = serializer.validated_data.get("paused", schedule.paused)
        if paused:
            schedules.schedule_pause(schedule=schedule)
        else:
            schedules.schedule_resume(schedule=schedule)


class LiveApi(APIView):
    """Send one query now (``query``: its external id, text or id) and answer the live
    hits beside ``result_list``'s (the project's newest by default), with grades."""

    permission_classes = [IsAnalyst]

    @extend_schema(
        responses={
            200: OpenApiResponse(description="The live hits beside the stored ones."),
            502: OpenApiResponse(description="The engine did not answer: ``error`` says why."),
        }
    )
    def get(self, request, pk):
        endpoint = get_object_or_404(SearchEndpoint.objects.select_related("project"), pk=pk)
        project = endpoint.project
        name = request.query_params.get("query", "")
        [query_id] = services.query_ids_named(project, name) or [None]
        if query_id is None:
            raise ValidationError({"query": ["Name a query: its external id or its text."]})
        lists = project.result_lists.order_by("-captured_at")
        chosen = request.query_params.get("result_list")
        result_list = (
            get_object_or_404(ResultList, pk=chosen, project=project) if chosen else lists.first()
        )
        view = live_query(
            endpoint=endpoint, query=project.queries.get(pk=query_id), result_list=result_list
        )
        body = {
            "query": view.query.text,
            "version": view.template.version,
            "error": view.error,
            "status": view.status,
            "result_list": result_list.pk if result_list else None,
            "live": [_hit(hit) for hit in view.live],
            "stored": [_hit(hit) for hit in view.stored],
        }
        return Response(body, status=status.HTTP_502_BAD_GATEWAY if view.error else 200)


def _hit(hit) -> dict:
    return {
        "rank": hit.rank,
        "id": hit.external_id,
        "title": hit.title,
        "score": hit.score,
        "grade": hit.grade,
        "judged": hit.judged,
        "other_rank": hit.other_rank,
    }


def _valid(serializer_class, data) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
