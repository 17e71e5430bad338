"""Projects (create, read, update, delete) and the background jobs the API starts.

Raters read the projects they may rate; analysts and admins create, change and
delete them. A project's settings are checked by ``Project.full_clean()``, as on the
settings page (see judgements.projects). Deleting a project, and an upload larger
than ``UPLOAD_BACKGROUND_BYTES``, run as a background job: the answer is 202 with the
job, whose address (``GET jobs/<id>/``) tells how far it got.
"""

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils.text import slugify
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import generics, serializers, status
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.response import Response

from judgements import jobs
from judgements.api.access import IsAnalyst, Pages, visible_projects
from judgements.models import MAX_GRADES, Job, Project
from judgements.projects import project_validate, settings_fields
from judgements.roles import can_rate, is_analyst
from judgements.uploads import UPLOADS, json_options

UPLOAD_CHUNK = 1 << 20


class RatersReadAnalystsWrite(BasePermission):
    message = "Raters may read projects; analysts create, change and delete them."

    def has_permission(self, request, view):
        if request.method in SAFE_METHODS:
            return can_rate(request.user)
        return is_analyst(request.user)


SCALE_SCHEMA = {
    "type": "array",
    "minItems": 2,
    "maxItems": MAX_GRADES,
    "description": "Grades, lowest value first; values distinct whole numbers.",
    "items": {
        "type": "object",
        "required": ["value", "label"],
        "properties": {
            "value": {"type": "integer"},
            "label": {"type": "string"},
            "description": {"type": "string"},
        },
    },
}


@extend_schema_field(SCALE_SCHEMA)
class ScaleField(serializers.JSONField):
    """The scale as JSON; its rules are the model's (``Project.clean``)."""


class ProjectSerializer(serializers.ModelSerializer):
    scale = ScaleField(required=False)
    slug = serializers.SlugField(
        max_length=100, required=False, help_text="Left out: made from the name. Fixed after."
    )

    class Meta:
        model = Project
        fields = [*settings_fields(), "created_at"]
        read_only_fields = ["created_at"]

    def validate(self, attrs):
        slug = attrs.get("slug")
        if self.instance is not None and slug not in (None, self.instance.slug):
            raise serializers.ValidationError({"slug": "A project's slug cannot change."})
        if self.instance is None and not slug:
            attrs["slug"] = slugify(attrs.get("name", ""))[:100]
        try:
            project_validate(self.instance or Project(), attrs)
        except DjangoValidationError as error:
            raise serializers.ValidationError(error.message_dict) from error
        return attrs

    def create(self, validated_data):
        try:
            with transaction.atomic():
                return super().create(validated_data)
        except IntegrityError as error:
            # Another request took the slug between the check and the write.
            raise serializers.ValidationError({"slug": "That slug was just taken."}) from error


class JobSerializer(serializers.ModelSerializer):
    project = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    percent = serializers.IntegerField(allow_null=True, help_text="0-100; null if unknown.")
    url = serializers.SerializerMethodField(help_text="Where to poll this job.")
    result = serializers.DictField(help_text="What the job did, once done.")
    errors = serializers.ListField(
        child=serializers.DictField(), help_text='[{"field", "line", "message"}], once failed.'
    )
    worker_lost = serializers.BooleanField(
        read_only=True,
        help_text="Running, but its worker stopped renewing its lease: a worker ends it as "
        "failed shortly, saying where it stopped (judgements/leases.py).",
    )

    class Meta:
        model = Job
        fields = [
            "id", "kind", "status", "label", "project", "stage", "done", "total", "percent",
            "result", "errors", "created_at", "started_at", "finished_at", "worker_lost", "url",
        ]  # fmt: skip

    def get_url(self, job: Job) -> str:
        return reverse("api:job", args=[job.pk])


def job_accepted(job: Job) -> Response:
    data = JobSerializer(job).data
    return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": data["url"]})


JOB_ACCEPTED = OpenApiResponse(JobSerializer, "Accepted: a background job; poll its url.")


class ProjectListApi(generics.ListCreateAPIView):
    """Projects: all of them for an analyst, those a rater may rate for a rater; not
    those being deleted (as on the home page: their own address still answers).

    ``POST`` creates a project (analysts and admins); the slug, if left out, comes
    from the name.
    """

    permission_classes = [RatersReadAnalystsWrite]
    serializer_class = ProjectSerializer
    pagination_class = Pages

    def get_queryset(self):
        projects = visible_projects(self.request.user)
        return projects.exclude(pk__in=jobs.projects_being_deleted()).order_by("name", "pk")


class ProjectDetailApi(generics.RetrieveUpdateDestroyAPIView):
    """One project. ``PUT``/``PATCH`` change its settings; the slug stays. ``DELETE``
    deletes it and everything in it as a background job (202)."""

    permission_classes = [RatersReadAnalystsWrite]
    serializer_class = ProjectSerializer
    lookup_field = "slug"

    def get_queryset(self):
        return visible_projects(self.request.user)

    @extend_schema(responses={202: JOB_ACCEPTED})
    def delete(self, request, slug):
        project = self.get_object()
        job = jobs.deleting(project)
        job = job or jobs.project_delete_start(project=project, user=request.user)
        return job_accepted(job)


class JobDetailApi(generics.RetrieveAPIView):
    """A background job (a large upload, a deletion): its status, progress and outcome."""

    permission_classes = [IsAnalyst]
    serializer_class = JobSerializer
    queryset = Job.objects.select_related("project")


def upload_run(request, project: Project, kind: str, data: dict):
    """Run an import of ``data`` (the validated upload) now, or, for a file larger than
    ``UPLOAD_BACKGROUND_BYTES``, start it as a job; returns the result or the Job."""
    files = {part: data[part] for part in ("file", "queries") if data.get(part)}
    options = json_options({name: value for name, value in data.items() if name not in files})
    options.pop("queries", None)
    if sum(file.size for file in files.values()) > settings.UPLOAD_BACKGROUND_BYTES:
        label = files["file"].name
        return jobs.job_start(
            kind=kind,
            label=label,
            user=request.user,
            project=project,
            options=options,
            files=files,
        )
    chunks = {part: file.chunks(UPLOAD_CHUNK) for part, file in files.items()}
    return UPLOADS[kind].run(project=project, files=chunks, user=request.user, options=options)
