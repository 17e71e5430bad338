"""A project's search-event log: results pages shown, clicks, and the dwell after a click.

One table for the three kinds of event, so that a batch is one COPY and the metrics
one scan. Events are append-only and unique per project by their ``event_id``:
sending an event again changes nothing (the first version stored wins).
"""

from django.db import models

from judgements.models import Project, Query


class SearchEvent(models.Model):
    class Kind(models.IntegerChoices):
        IMPRESSION = 0, "impression"
        CLICK = 1, "click"
        DWELL = 2, "dwell"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="search_events")
    event_id = models.CharField(max_length=200)
    kind = models.SmallIntegerField(choices=Kind.choices)
    session_id = models.CharField(max_length=200)
    at = models.DateTimeField()
    # Impressions: the query as logged, its normalised form (searchlogs.matching) and
    # the project's query with that normalised text, if any.
    query_text = models.CharField(max_length=500, blank=True, default="")
    query_key = models.CharField(max_length=500, blank=True, default="")
    query = models.ForeignKey(
        Query, on_delete=models.SET_NULL, null=True, blank=True, related_name="search_events"
    )
    documents = models.JSONField(
        default=list, blank=True, help_text="External ids shown, in rank order."
    )
    answered = models.BooleanField(default=False)
    # Clicks: the document's external id and its rank on the page.
    document = models.CharField(max_length=200, blank=True, default="")
    rank = models.IntegerField(null=True, blank=True)
    # Dwell: the click it measures, and seconds until the searcher came back or the
    # end-of-session marker (never came back).
    click_event_id = models.CharField(max_length=200, blank=True, default="")
    dwell_seconds = models.FloatField(null=True, blank=True)
    end_of_session = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "event_id"], name="searchevent_unique_event_per_project"
            ),
        ]
        indexes = [
            models.Index(fields=["project", "session_id", "at"], name="searchevent_session"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.event_id} ({self.session_id})"


class SearchLogSettings(models.Model):
    """Per-project settings of the online metrics; a project without a row uses defaults."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, related_name="search_log_settings"
    )
    success_dwell = models.FloatField(
        default=10.0, help_text="Seconds of dwell from which a click counts as a success."
    )

    def __str__(self) -> str:
        return f"Search log settings of {self.project}"


class SearchLogState(models.Model):
    """A project's log version: raised by every batch that stores an event, so that
    figures computed from the log can be cached under it (searchlogs.dashboards)."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, related_name="search_log_state"
    )
    version = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"Search log of {self.project}, version {self.version}"


class ParquetLog(models.Model):
    """A project's log kept as Parquet files and read where they are (searchlogs.parquet),
    instead of ingested: the online metrics are then computed by DuckDB."""

    class Layout(models.TextChoices):
        OURS = "ours", "our JSON Lines fields"
        UBI = "ubi", "User Behavior Insights (ubi_queries and ubi_events)"

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="parquet_log")
    layout = models.CharField(max_length=8, choices=Layout, default=Layout.OURS)
    events = models.CharField(
        max_length=1000, help_text="A folder or glob of Parquet files: the events (ubi_events)."
    )
    queries = models.CharField(
        max_length=1000, blank=True, help_text="UBI only: a folder or glob of ubi_queries."
    )

    def __str__(self) -> str:
        return f"Parquet log of {self.project}: {self.events}"


class QueryTraffic(models.Model):
    """A project query's traffic in the log when it was drawn from it (searchlogs.sampling):
    its results pages, and the stratum it was drawn from. NDCG's mean may be weighted by it
    (``weight=traffic``)."""

    class Stratum(models.TextChoices):
        HEAD = "head", "head"
        TORSO = "torso", "torso"
        TAIL = "tail", "tail"
        TOP = "top", "top N"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="query_traffic")
    query = models.OneToOneField(Query, on_delete=models.CASCADE, related_name="traffic")
    impressions = models.PositiveBigIntegerField()
    stratum = models.CharField(max_length=8, choices=Stratum)
    drawn_at = models.DateTimeField()
    seed = models.BigIntegerField(null=True, blank=True, help_text="None for the top N.")

    class Meta:
        indexes = [models.Index(fields=["project", "stratum"], name="querytraffic_stratum")]

    def __str__(self) -> str:
        return f"{self.query}: {self.impressions} pages ({self.stratum})"
