"""The rating queue's tables: the pool, analysts' requests, tallies, leases and skips
(kept by the triggers of judgements/sql/queue.sql and queue_tally.sql)."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from judgements.models.catalogue import Document, Query
from judgements.models.project import Project


class QueuePair(models.Model):
    """One (query, document) pair of a project's pool, kept current by database triggers.

    The triggers of migration 0004 update ``best_rank``, ``grades``, ``needed`` and
    ``answered`` on every write to hits, judgements and projects, whatever code makes
    it (rating page, API, importers, COPY), so that picking the next pair for a rater
    reads one partial index instead of aggregating every hit and judgement.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    # queue_pair_unique leads with query.
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+", db_index=False)
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    best_rank = models.PositiveIntegerField(help_text="Best rank in any result list.")
    grades = models.PositiveSmallIntegerField(
        default=0, help_text="Raters whose current answer is a grade."
    )
    needed = models.SmallIntegerField(help_text="judges_per_pair - grades; 0 or less is done.")
    answered = models.JSONField(
        default=dict,
        help_text="The UTC day of each current answer (grade or can't tell), by rater id.",
    )
    wanted = models.PositiveSmallIntegerField(
        default=0,
        help_text="Current grades an analyst asked for (the most of any request); 0 if none.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["query", "document"], name="queue_pair_unique"),
        ]
        indexes = [
            # The queue's order; only pairs still short of raters are indexed.
            models.Index(
                fields=["project", "best_rank", "grades", "query", "document"],
                condition=models.Q(needed__gt=0),
                name="queue_pair_open_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.query_id}/{self.document_id} (best rank {self.best_rank})"


class QueueRequest(models.Model):
    """An analyst's request for more grades on one pair, such as a disputed one.

    Append-only: the pair should have at least ``wanted`` current grades (one more than
    it had when asked). The triggers of migration 0007 keep the most any request wants
    in ``QueuePair.wanted``; a pair deeper than the pool depth joins the pool with it.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    # queue_request_unique leads with query.
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+", db_index=False)
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    wanted = models.PositiveSmallIntegerField(
        help_text="The pair should have at least this many current grades."
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    requested_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # Asking twice for the same grade (a double click) adds nothing.
            models.UniqueConstraint(
                fields=["query", "document", "wanted"], name="queue_request_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.query_id}/{self.document_id}: {self.wanted} grades wanted"


class QueuePoolTally(models.Model):
    """How many pairs of a project's pool are still short of raters, kept by triggers on
    QueuePair (migration 0004) so that the progress bar reads one row, not the pool."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="+")
    open_pairs = models.IntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.project_id}: {self.open_pairs} open pairs"


class QueueRaterTally(models.Model):
    """How many pool pairs of a project a rater has answered (grade or can't tell), how
    many of those are still open and how many on one day, kept like QueuePoolTally."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    answered = models.IntegerField(default=0)
    answered_open = models.IntegerField(default=0)
    day = models.DateField(null=True, help_text="The UTC day answered_on_day counts.")
    answered_on_day = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "rater"], name="queue_rater_tally_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.rater_id} answered {self.answered} pairs of {self.project_id}"


class QueueLease(models.Model):
    """A rater's short hold on one open slot of a pair, so that two raters are not handed
    the same last slot. An expired lease counts for nothing and is replaced on the next
    claim, so an abandoned pair returns to the pool by itself."""

    # queue_lease_unique leads with query.
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+", db_index=False)
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    expires_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["query", "document", "rater"], name="queue_lease_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rater} holds {self.query_id}/{self.document_id} until {self.expires_at}"


class QueueSkip(models.Model):
    """A rater's "judge later" on one pair: one row per press of Skip, never changed.

    The queue offers a pair its rater skipped only once no other pair is left for them,
    the pair skipped longest ago first; analysts read how often each rater skips.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    # queue_skip_pair_idx leads with query.
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+", db_index=False)
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    # queue_skip_rater_idx leads with rater.
    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    skipped_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            # The queue asks, per candidate pair, whether this rater skipped it.
            models.Index(fields=["query", "document", "rater"], name="queue_skip_pair_idx"),
            # The back of a rater's queue, and each rater's count of skips.
            models.Index(fields=["rater", "project", "skipped_at"], name="queue_skip_rater_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.rater} skipped {self.query_id}/{self.document_id} at {self.skipped_at}"
