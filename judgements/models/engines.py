"""The team's search engines: endpoints, their request templates, captures and schedules
(issue 40). Their pages and services live in ``judgements.engines``."""

import hashlib

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.urls import reverse
from django.utils import timezone

from judgements.models.catalogue import ResultList
from judgements.models.project import MAX_DEPTH, Project

MAX_CONCURRENCY = 32
MAX_TIMEOUT_SECONDS = 300.0


class SearchEndpoint(models.Model):
    """One search engine index (or collection, or HTTP search API) the app may ask.

    What is sent is the current version of its request template; how a hit is read
    is the ``*_field`` settings. The secret is stored encrypted and never shown again.
    """

    class Kind(models.TextChoices):
        ELASTICSEARCH = "elasticsearch", "Elasticsearch"
        OPENSEARCH = "opensearch", "OpenSearch"
        SOLR = "solr", "Solr"
        JSON = "json", "JSON search API"

    class Auth(models.TextChoices):
        NONE = "none", "none"
        BASIC = "basic", "basic (user name and password)"
        API_KEY = "api_key", "API key"
        BEARER = "bearer", "bearer token"

    class Method(models.TextChoices):
        GET = "GET", "GET (the template's keys are query parameters)"
        POST = "POST", "POST (the template is the JSON body)"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="search_endpoints")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=Kind, default=Kind.ELASTICSEARCH)
    base_url = models.URLField(
        "base URL", max_length=500, help_text="e.g. https://search.example.org:9200"
    )
    index = models.CharField(
        "index, collection or path",
        max_length=300,
        help_text="The index (Elasticsearch, OpenSearch), the collection (Solr), or the "
        "path of the search API (JSON, e.g. /api/search).",
    )
    method = models.CharField(
        "HTTP method", max_length=4, choices=Method, default=Method.GET, help_text="JSON only."
    )
    id_field = models.CharField(
        "id field",
        max_length=200,
        blank=True,
        help_text="The hit's document id; empty for the engine's own (_id, Solr's id).",
    )
    title_field = models.CharField(max_length=200, blank=True)
    url_field = models.CharField("URL field", max_length=200, blank=True)
    snippet_field = models.CharField(max_length=200, blank=True)
    kept_fields = models.JSONField(
        default=list, blank=True, help_text="Other fields of the hit kept on its document."
    )
    hits_path = models.CharField(
        "hits path",
        max_length=200,
        blank=True,
        help_text="JSON only: where the list of hits is in the answer, e.g. data.results.",
    )
    auth = models.CharField(max_length=16, choices=Auth, default=Auth.NONE)
    username = models.CharField("user name", max_length=200, blank=True)
    # The password, API key or token, encrypted with config.encryption; never shown.
    secret_encrypted = models.TextField(blank=True, editable=False)
    timeout_seconds = models.FloatField(
        default=10.0, validators=[MinValueValidator(0.1), MaxValueValidator(MAX_TIMEOUT_SECONDS)]
    )
    concurrency = models.PositiveSmallIntegerField(
        default=4,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_CONCURRENCY)],
        help_text="Requests in flight at once.",
    )
    depth = models.PositiveSmallIntegerField(
        default=10,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_DEPTH)],
        help_text="Hits kept per query.",
    )
    current_version = models.PositiveIntegerField(
        default=1, help_text="The template version captures and schedules send."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name"], name="search_endpoint_unique_name"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("judgements:engine", args=[self.project.slug, self.pk])

    @property
    def has_secret(self) -> bool:
        return bool(self.secret_encrypted)

    @property
    def template(self) -> "SearchTemplate | None":
        """The version captures send."""
        return self.templates.filter(version=self.current_version).first()


class SearchTemplate(models.Model):
    """One version of an endpoint's request template: a JSON query DSL body, Solr
    parameters or a search API's parameters, with ``{{query}}`` where the query goes.
    Versions are never changed; an edit is a new version."""

    endpoint = models.ForeignKey(
        SearchEndpoint, on_delete=models.CASCADE, related_name="templates"
    )
    version = models.PositiveIntegerField()
    body = models.TextField()
    digest = models.CharField(max_length=64, editable=False)
    note = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["endpoint", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["endpoint", "version"], name="search_template_unique_version"
            ),
            # Trying the same text twice reuses its version.
            models.UniqueConstraint(
                fields=["endpoint", "digest"], name="search_template_unique_body"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.endpoint} v{self.version}"

    @staticmethod
    def digest_of(body: str) -> str:
        return hashlib.sha256(body.encode()).hexdigest()


class CaptureSchedule(models.Model):
    """Captures of an endpoint's current template at the times of a cron expression
    (UTC). Each firing is a deferred task of the task worker that queues the next one."""

    endpoint = models.ForeignKey(
        SearchEndpoint, on_delete=models.CASCADE, related_name="schedules"
    )
    expression = models.CharField(
        max_length=100, help_text="Minute hour day month weekday, in UTC (cron)."
    )
    paused = models.BooleanField(default=False)
    next_run_at = models.DateTimeField(null=True, blank=True)
    # The firing that may run: a new arming (resume, edit) makes older queued ones stale.
    token = models.UUIDField(null=True, blank=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["endpoint", "created_at"]

    def __str__(self) -> str:
        return f"{self.endpoint}: {self.expression}"


class Capture(models.Model):
    """One run of a template version over a project's queries, and what came of it.

    A capture (``manual``, ``scheduled``) stores a result list when it ends; a try
    (``try``, and the CI gate's ``gate``) keeps its ranking here, out of the raters'
    pool, until an analyst keeps it as a result list.
    """

    class Kind(models.TextChoices):
        MANUAL = "manual", "capture"
        SCHEDULED = "scheduled", "scheduled capture"
        TRY = "try", "try"
        GATE = "gate", "CI gate candidate"

    class Status(models.TextChoices):
        QUEUED = "queued", "waiting for a worker"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    endpoint = models.ForeignKey(SearchEndpoint, on_delete=models.CASCADE, related_name="captures")
    # A version used by a capture stays (RESTRICT), unless its endpoint goes.
    template = models.ForeignKey(
        SearchTemplate, on_delete=models.RESTRICT, related_name="captures"
    )
    kind = models.CharField(max_length=16, choices=Kind, default=Kind.MANUAL)
    schedule = models.ForeignKey(
        CaptureSchedule,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="captures",
    )
    name = models.CharField(max_length=200, help_text="The result list's name.")
    query_ids = models.JSONField(default=list, blank=True, help_text="Empty: every query.")
    baseline = models.ForeignKey(
        ResultList, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    result_list = models.OneToOneField(
        ResultList, null=True, blank=True, on_delete=models.SET_NULL, related_name="capture"
    )
    # Tries and gate candidates only: [[query id, [hit, ...]], ...], each hit a dict.
    ranking = models.JSONField(default=list, blank=True)
    judge = models.BooleanField(default=True, help_text="Whether its hits join the pool.")
    status = models.CharField(max_length=16, choices=Status, default=Status.QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    failures = models.JSONField(
        default=list, blank=True, help_text='[{"query", "status", "message"}] per failed query.'
    )
    error = models.TextField(blank=True, help_text="Why nothing was stored.")
    notes = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["endpoint", "-created_at"], name="capture_endpoint_idx")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.name} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("judgements:capture", args=[self.endpoint.project.slug, self.pk])

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def is_try(self) -> bool:
        return self.kind in (self.Kind.TRY, self.Kind.GATE)

    @property
    def percent(self) -> int | None:
        if self.status == self.Status.DONE:
            return 100
        return min(100, int(100 * self.done / self.total)) if self.total else None
