"""Background work (uploads, deletes) and the uploaded blocks it reads."""

import uuid

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from judgements.models.project import Project


class Job(models.Model):
    """Work that runs as a background task (an upload, a delete), and how far it got.

    The page and the API poll this row. The task writes ``done`` and ``stage`` through
    a connection of its own, so that progress shows while the work's own transaction,
    all or nothing, is still open.
    """

    class Kind(models.TextChoices):
        QUERIES = "queries", "queries"
        DOCUMENTS = "documents", "documents"
        RESULT_LIST = "result_list", "result list"
        JUDGEMENTS = "judgements", "judgements"
        SEARCH_LOG = "search_log", "search log"
        DELETE_PROJECT = "delete_project", "project deletion"
        DELETE_RESULT_LIST = "delete_result_list", "result list deletion"

    class Status(models.TextChoices):
        QUEUED = "queued", "waiting for a worker"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Kept (as NULL) when the project goes, so that a finished deletion can be read.
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.DB_SET_NULL, related_name="jobs"
    )
    kind = models.CharField(max_length=32, choices=Kind)
    status = models.CharField(max_length=16, choices=Status, default=Status.QUEUED)
    label = models.CharField(max_length=300, help_text="What the job works on, for people.")
    options = models.JSONField(
        default=dict, blank=True, help_text="Keyword arguments for the service it runs."
    )
    stage = models.CharField(max_length=200, blank=True)
    done = models.BigIntegerField(default=0, help_text="Bytes (or steps) done.")
    total = models.BigIntegerField(default=0, help_text="Bytes (or steps) in all; 0 if unknown.")
    result = models.JSONField(default=dict, blank=True, help_text="The summary, once done.")
    errors = models.JSONField(
        default=list, blank=True, help_text='[{"field", "line", "message"}], once failed.'
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.DB_SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Renewed by the task running the job (judgements/leases.py); a running job whose
    # lease has run out has lost its worker.
    lease_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["project", "-created_at"], name="job_project_idx")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.label} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("judgements:job", args=[self.pk])

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def worker_lost(self) -> bool:
        """Running, but its worker stopped renewing the lease: it died (a worker ends
        such a job as failed, judgements.leases)."""
        return (
            self.status == self.Status.RUNNING
            and self.lease_until is not None
            and self.lease_until < timezone.now()
        )

    @property
    def seconds(self) -> float | None:
        """How long the job ran, once it ended."""
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()

    @property
    def percent(self) -> int | None:
        """How far the job got, 0-100, or None while the total is unknown."""
        if self.status == self.Status.DONE:
            return 100
        if not self.total:
            return None
        return min(100, int(100 * self.done / self.total))


class JobUpload(models.Model):
    """One block of a file uploaded for a job, kept in the database so that a worker on
    another machine (or container) can read it; deleted when the job ends."""

    job = models.ForeignKey(Job, on_delete=models.DB_CASCADE, related_name="+", db_index=False)
    part = models.CharField(max_length=16, help_text='"file", or "queries" for a qid map.')
    number = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "part", "number"], name="job_upload_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.job_id} {self.part} #{self.number}"
