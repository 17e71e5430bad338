"""What is judged: queries, documents, result lists and their ranked hits."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from judgements.models.project import Project
from judgements.querysets import HitQuerySet


class Query(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="queries")
    text = models.CharField(max_length=500)
    # db_default too: bulk loads write queries with COPY and name only their own columns.
    external_id = models.CharField(
        max_length=200,
        blank=True,
        default="",
        db_default="",
        help_text="The team's own query id (a TREC qid), unique in the project when given.",
    )
    description = models.TextField(blank=True, help_text="The information need, for raters.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "queries"
        ordering = ["project", "text"]
        constraints = [
            models.UniqueConstraint(fields=["project", "text"], name="query_unique_text"),
            models.UniqueConstraint(
                fields=["project", "external_id"],
                condition=~models.Q(external_id=""),
                name="query_unique_external_id",
            ),
        ]

    def __str__(self) -> str:
        return self.text


class Document(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="documents")
    external_id = models.CharField(max_length=200, help_text="The search engine's own id.")
    title = models.CharField(max_length=500, blank=True)
    url = models.URLField(max_length=2000, blank=True)
    snippet = models.TextField(blank=True)
    image_url = models.URLField(max_length=2000, blank=True)
    fields = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["project", "external_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "external_id"], name="document_unique_external_id"
            ),
        ]

    def __str__(self) -> str:
        return self.title or self.external_id


class ResultList(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="result_lists")
    name = models.CharField(max_length=200)
    engine = models.CharField(max_length=200, blank=True, help_text="Engine configuration.")
    captured_at = models.DateTimeField(help_text="When the engine returned these hits.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project", "captured_at", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="result_list_unique_name"),
        ]

    def __str__(self) -> str:
        return self.name


class Hit(models.Model):
    # Composite indexes below lead with result_list and query, so their own
    # single-column indexes would only slow down writes.
    result_list = models.ForeignKey(
        ResultList, on_delete=models.CASCADE, related_name="hits", db_index=False
    )
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="hits", db_index=False)
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="hits")
    rank = models.PositiveIntegerField()
    score = models.FloatField(null=True, blank=True)

    objects = HitQuerySet.as_manager()

    class Meta:
        ordering = ["result_list", "query", "rank"]
        constraints = [
            models.UniqueConstraint(
                fields=["result_list", "query", "rank"], name="hit_unique_rank"
            ),
            models.UniqueConstraint(
                fields=["result_list", "query", "document"], name="hit_unique_document"
            ),
            models.CheckConstraint(condition=models.Q(rank__gte=1), name="hit_rank_gte_1"),
        ]
        indexes = [
            # The pool of a project is read by (query, document) and by rank depth.
            models.Index(fields=["query", "document", "rank"], name="hit_pair_rank_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.result_list} / {self.query} #{self.rank}"
