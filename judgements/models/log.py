"""The judgement log: append-only events, one per answer a rater gave.

A rater who changes their mind adds a new event; the newest event per rater and pair
(by ``created_at``, then ``id``) is that rater's current answer
(``Judgement.objects.current()``; in SQL ``judgements_current_answers``). A database
trigger (judgements/sql/append_only.sql) refuses UPDATE on the table, so any NDCG of
the past can be recomputed from the log.
"""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from judgements.models.catalogue import Document, Query
from judgements.querysets import JudgementQuerySet


class Judgement(models.Model):
    class Kind(models.TextChoices):
        GRADE = "grade", "grade"
        CANT_TELL = "cant_tell", "can't tell"
        RETRACT = "retract", "retracted"

    class Source(models.TextChoices):
        WEB = "web", "rating page"
        API = "api", "API"
        IMPORT = "import", "import"
        DEMO = "demo", "demo data"
        GENERATED = "generated", "generated load"
        # A machine judge's answer (judgements.machine): no rater's current answer, so out
        # of every human number (HUMAN_EVENT_SQL, migration 0022); the project's gate may
        # admit it into the "both" grades.
        MACHINE = "machine", "machine judge"
        # An analyst's own grade replacing a machine judge's on one pair: a human event.
        OVERRULE = "overrule", "analyst's overrule of a machine grade"

    # judgement_latest_idx and judgement_rater_idx lead with query and rater.
    query = models.ForeignKey(
        Query, on_delete=models.CASCADE, related_name="judgements", db_index=False
    )
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="judgements")
    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="judgements",
        db_index=False,
    )
    kind = models.CharField(max_length=16, choices=Kind, default=Kind.GRADE)
    grade = models.SmallIntegerField(null=True, blank=True)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    source = models.CharField(max_length=16, choices=Source, default=Source.WEB)
    import_id = models.UUIDField(
        null=True, blank=True, help_text="The import that brought this event in, if any."
    )
    source_event_id = models.CharField(
        max_length=200,
        blank=True,
        db_default="",
        help_text="The event's id in the file it was imported from; imported once per project.",
    )

    objects = JudgementQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # A grade is present exactly when the event is a grade.
            models.CheckConstraint(
                condition=(
                    models.Q(kind="grade", grade__isnull=False)
                    | (~models.Q(kind="grade") & models.Q(grade__isnull=True))
                ),
                name="judgement_grade_iff_kind_grade",
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=["grade", "cant_tell", "retract"]),
                name="judgement_kind_valid",
            ),
        ]
        indexes = [
            # "Latest event per rater and pair": DISTINCT ON reads this index in order.
            models.Index(
                fields=["query", "document", "rater", "-created_at", "-id"],
                name="judgement_latest_idx",
            ),
            models.Index(fields=["rater", "-created_at"], name="judgement_rater_idx"),
            models.Index(
                fields=["source_event_id"],
                condition=~models.Q(source_event_id=""),
                name="judgement_source_event_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rater} graded {self.document} for {self.query}: {self.grade}"

    def clean(self) -> None:
        errors = {}
        if (
            self.document_id
            and self.query_id
            and self.document.project_id != self.query.project_id
        ):
            errors["document"] = "This document belongs to another project than the query."
        if self.kind != self.Kind.GRADE:
            if self.grade is not None:
                errors["grade"] = "Only a grade event carries a grade."
        elif self.grade is None:
            errors["grade"] = "A grade is required (or answer can't tell)."
        elif self.query_id and self.grade not in self.query.project.grade_values:
            scale = self.query.project.grade_values
            errors["grade"] = f"Grade {self.grade} is outside the scale {min(scale)}-{max(scale)}."
        if errors:
            raise ValidationError(errors)
