"""Stored metric values: a time series per result list, per query and overall."""

from django.db import models
from django.utils import timezone

from judgements.models import Project, Query, ResultList

# Every stored field of a point but its key (list, query, metric, moment): what an
# upsert of points replaces.
POINT_FIELDS = [
    "value",
    "dcg",
    "idcg",
    "judged",
    "retrieved",
    "judgements",
    "queries",
    "zero_idcg",
    "computed_at",
    "ci_low",
    "ci_high",
    "ci_confidence",
    "ci_resamples",
    "ci_seed",
    "queries_judged",
    "queries_returned",
    "ci_pending",
]


class MetricPoint(models.Model):
    """One metric value of a result list as of a moment of the judgement log.

    ``query`` is null for the mean over the result list's queries. Then ``queries``
    counts the queries behind the mean (the metric's ``mean_over``: those with a
    current grade, or all of them and the judged queries the list did not return),
    ``zero_idcg`` those of them whose NDCG is 0 by convention, and the ``ci_*`` fields
    hold the mean's percentile bootstrap interval over them with the parameters it
    was drawn with. Coverage is over every query the list returned, whichever the
    mean counts: ``queries_returned`` of them, ``queries_judged`` with at least one
    current grade, and ``judged``, ``retrieved`` and ``judgements`` summed over them.
    Those two counts and the ``ci_*`` fields are null on per-query points (and the
    counts on overall points stored before they were kept). ``ci_pending``: the
    interval is of an earlier state of the list's queries than the mean (a grade's
    refresh computes the mean and counts alone, ``metrics.overall``), and a task
    (``metrics.tasks.result_list_interval``) is queued to draw it again.
    """

    # No index of its own: three indexes below lead with the list. One on the list alone
    # read every per-query point of a list where statistics were young (a new project):
    # the planner took it to find a list's overall point, filtering its other rows out.
    result_list = models.ForeignKey(
        ResultList, on_delete=models.CASCADE, related_name="metric_points", db_index=False
    )
    query = models.ForeignKey(
        Query, on_delete=models.CASCADE, null=True, blank=True, related_name="metric_points"
    )
    metric = models.CharField(max_length=120, help_text="MetricSpec.name: every parameter.")
    as_of = models.DateTimeField(help_text="Judgements recorded after this are ignored.")
    value = models.FloatField()
    dcg = models.FloatField(null=True, blank=True)
    idcg = models.FloatField(null=True, blank=True)
    judged = models.PositiveIntegerField(help_text="Judged hits within the cut-off.")
    retrieved = models.PositiveIntegerField(help_text="Hits within the cut-off.")
    judgements = models.PositiveIntegerField(help_text="Current grades counted.")
    queries = models.PositiveIntegerField(default=1)
    zero_idcg = models.PositiveIntegerField(default=0)
    computed_at = models.DateTimeField(default=timezone.now)
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    ci_confidence = models.FloatField(null=True, blank=True, help_text="E.g. 0.95.")
    ci_resamples = models.PositiveIntegerField(null=True, blank=True)
    ci_seed = models.PositiveIntegerField(null=True, blank=True)
    queries_judged = models.PositiveIntegerField(
        null=True, blank=True, help_text="Queries the list returned with a current grade."
    )
    queries_returned = models.PositiveIntegerField(
        null=True, blank=True, help_text="Queries the list returned."
    )
    ci_pending = models.BooleanField(
        default=False,
        db_default=False,
        help_text="The interval is older than the mean; a task draws it again.",
    )

    class Meta:
        constraints = [
            # nulls_distinct=False: the overall point (query NULL) is unique too.
            models.UniqueConstraint(
                fields=["result_list", "query", "metric", "as_of"],
                nulls_distinct=False,
                name="metric_point_unique",
            ),
        ]
        indexes = [
            models.Index(
                fields=["result_list", "metric", "query", "-as_of"], name="metric_point_series_idx"
            ),
            # A list's newest overall point (a refresh's moment and its previous point)
            # in one descent: through the query_id index PostgreSQL read every overall
            # point of every list, and through the series index it may read the
            # per-query points too.
            models.Index(
                fields=["result_list", "metric", "-as_of"],
                condition=models.Q(query__isnull=True),
                name="metric_point_overall_idx",
            ),
        ]

    def __str__(self) -> str:
        scope = self.query or "all queries"
        return f"{self.metric} of {self.result_list} for {scope} as of {self.as_of:%Y-%m-%d %H:%M}"

    @property
    def coverage(self) -> float:
        return self.judged / self.retrieved if self.retrieved else 0.0

    @property
    def judged_share(self) -> float | None:
        """Share of the returned queries with a current grade (None if not kept)."""
        if not self.queries_returned or self.queries_judged is None:
            return None
        return self.queries_judged / self.queries_returned


class LatestMetricPoint(models.Model):
    """A copy of the newest stored per-query point of each (result list, metric, query).

    ``metric_points_store`` keeps it in the same transaction as the points, with an
    upsert that never replaces a newer point by an older one (rebuilding past
    buckets leaves it alone), so the latest values of a result list are one range
    read of ``latest_metric_point_unique`` rather than one index descent per query
    into the series. Overall points (query null) are not copied: there are few.
    """

    # latest_metric_point_unique leads with result_list.
    result_list = models.ForeignKey(
        ResultList, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+")
    metric = models.CharField(max_length=120)
    as_of = models.DateTimeField()
    value = models.FloatField()
    dcg = models.FloatField(null=True, blank=True)
    idcg = models.FloatField(null=True, blank=True)
    judged = models.PositiveIntegerField()
    retrieved = models.PositiveIntegerField()
    judgements = models.PositiveIntegerField()
    zero_idcg = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["result_list", "metric", "query"], name="latest_metric_point_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.metric} of {self.result_list} for {self.query}: latest as of {self.as_of}"


class RevisionCount(models.Model):
    """How many answers of one query's pairs raters revised in one UTC hour.

    Derived from the judgement log by ``metrics.revisions``, which defines a revision;
    the overview sums it per week instead of reading every event of the project. Kept
    like the stored series: ``metrics_refresh`` recounts the stale queries and
    ``metrics_rebuild`` the whole project (migration 0004 filled it); a reader takes
    the queries still marked stale, and the hour it is asked about, from the log. Only
    hours with a revision have a row.
    """

    # revision_count_unique leads with query.
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+", db_index=False)
    hour = models.DateTimeField(help_text="The start of the UTC hour.")
    revisions = models.PositiveIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["query", "hour"], name="revision_count_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.query_id} in the hour from {self.hour:%Y-%m-%d %H:%M}: {self.revisions}"


class StaleQuery(models.Model):
    """A query whose judgements changed since its metrics were last computed.

    Grading marks the query (one row however many grades arrive), and the
    recomputation task takes and deletes the marks, so bursts coalesce.
    """

    query = models.OneToOneField(Query, on_delete=models.CASCADE, primary_key=True)
    # The query's project, copied (metrics.refresh.queries_mark_stale), so that a
    # project's marks are one index probe: a join with the queries let the planner scan
    # the query table's key from another project's marks on (119 ms of a freshness
    # check on the bench's database, which held other projects' marks).
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    marked_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.query} (stale since {self.marked_at:%Y-%m-%d %H:%M})"
