"""Tables derived from the log and the hits, kept by triggers (judgements/sql/) and by
``judgements.packed``; docs/derived-state.md maps who keeps and who reads each."""

from django.contrib.postgres.fields import ArrayField
from django.db import models

from judgements.models.catalogue import Document, Query, ResultList
from judgements.models.project import Project
from metrics.core.consensus import policy_choices


class PairGrade(models.Model):
    """The current grades of one judged (query, document) pair, kept exact by database
    triggers on judgements (judgements/sql/pair_grades.sql): sorted, with each grade's
    rater in ``raters`` at the same position. No consensus is stored here: policies are
    numpy (metrics.core.consensus), applied to ``grades``.

    A row exists once any event was recorded for the pair; ``graded`` is 0 (and
    ``grades`` empty) while no rater's current answer is a grade. The table holds
    the state after every event in the log, whatever its ``created_at``, so it answers
    "as of now" only while no event is dated later than now (see
    ``metrics.selectors.pair_grades``).
    """

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    # pair_grade_unique leads with query; pair_grade_project_idx with project.
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+", db_index=False)
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    graded = models.PositiveSmallIntegerField(default=0, help_text="How many current grades.")
    lowest = models.SmallIntegerField(null=True, help_text="The lowest current grade.")
    highest = models.SmallIntegerField(null=True, help_text="The highest current grade.")
    grades = ArrayField(
        models.SmallIntegerField(), default=list, help_text="The current grades, lowest first."
    )
    raters = ArrayField(
        models.IntegerField(), default=list, help_text="The rater of each grade of ``grades``."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["query", "document"], name="pair_grade_unique"),
        ]
        indexes = [
            models.Index(fields=["project", "query", "document"], name="pair_grade_project_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.query_id}/{self.document_id}: {self.graded} grades"


class QueryGrades(models.Model):
    """How many of a query's documents have a current grade, and how many grades, kept
    exact by database triggers on PairGrade and Hit (migration 0008).

    Its row is also what those triggers lock, so that writers of one query's packed
    grades (RankedHits, RankedGrades) take turns. Like PairGrade it holds the state
    after every event in the log (see ``metrics.selectors``).
    """

    query = models.OneToOneField(
        Query, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    # The query's project, copied when the row is added (a query never changes
    # project), so that "does this project have a stale query?" is one probe of
    # query_grades_stale_idx however many stale queries other projects hold. No
    # foreign key: the query's cascade deletes the row, and a check per row would
    # cost a bulk load's rebuild an index probe for each of its queries.
    project = models.ForeignKey(
        Project,
        on_delete=models.DO_NOTHING,
        related_name="+",
        db_constraint=False,
        db_index=False,
    )
    graded = models.IntegerField(default=0, help_text="Current grades over all pairs.")
    judged = models.IntegerField(default=0, help_text="Pairs with a current grade.")
    stale = models.BooleanField(
        default=False,
        db_default=False,
        help_text="Set by the triggers when the query's grades or hits change: its "
        "RankedGrades wait for judgements.packed to fill them.",
    )

    class Meta:
        verbose_name_plural = "query grades"
        indexes = [
            models.Index(
                fields=["project", "query"],
                condition=models.Q(stale=True),
                name="query_grades_stale_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.query_id}: {self.judged} judged documents"


class QueryActivity(models.Model):
    """When the newest human event of a query was dated (the largest ``newest`` of its
    rows), with the query's project, kept by triggers on the log
    (judgements/sql/query_activity.sql; machine judges' events left out): the freshness
    rule (``metrics.sources``) asks whether a project has an event after a moment with
    one probe of ``query_activity_newest_idx``, instead of walking the log's later
    events of every project. Writers only insert rows (they never wait for each other
    here), and delete the rows their own make redundant when they can lock them at once.
    """

    # No foreign keys: the rows go with their query's last event (the delete trigger),
    # and a bulk load's statement would check each of its queries.
    query = models.ForeignKey(
        Query, on_delete=models.DO_NOTHING, related_name="+", db_constraint=False
    )
    project = models.ForeignKey(
        Project,
        on_delete=models.DO_NOTHING,
        related_name="+",
        db_constraint=False,
        db_index=False,
    )
    newest = models.DateTimeField(help_text="created_at of the newest human event it saw.")

    class Meta:
        verbose_name_plural = "query activity"
        indexes = [models.Index(fields=["project", "newest"], name="query_activity_newest_idx")]

    def __str__(self) -> str:
        return f"{self.query_id}: an event at {self.newest:%Y-%m-%d %H:%M:%S}"


class RankedHits(models.Model):
    """One result list's hits for one query, their document ids packed as big-endian
    int64 in rank order, so that a list's top ``k`` is one short prefix per query.
    Kept by the triggers of QueryGrades."""

    result_list = models.ForeignKey(
        ResultList, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+")
    hits = models.IntegerField(default=0)
    documents = models.BinaryField(default=b"")

    class Meta:
        verbose_name_plural = "ranked hits"
        constraints = [
            models.UniqueConstraint(fields=["result_list", "query"], name="ranked_hits_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.result_list_id}/{self.query_id}: {self.hits} hits"


class RankedGrades(models.Model):
    """What NDCG needs of one result list's query under one consensus policy, packed
    big-endian: each hit's consensus grade in rank order (float64, NaN while unjudged)
    and the query's judged grades as levels, highest first: each distinct grade
    (``ideal``, float64) and how many judged documents have it (``ideal_documents``,
    int32). Kept by the triggers of QueryGrades; a list's evaluation reads one row per
    query."""

    result_list = models.ForeignKey(
        ResultList, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+")
    policy = models.CharField(max_length=16, choices=policy_choices)
    graded = models.IntegerField(default=0, help_text="Current grades over all pairs.")
    ranked = models.BinaryField(default=b"")
    ideal = models.BinaryField(default=b"")
    ideal_documents = models.BinaryField(default=b"")

    class Meta:
        verbose_name_plural = "ranked grades"
        constraints = [
            models.UniqueConstraint(
                fields=["result_list", "policy", "query"], name="ranked_grades_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.result_list_id}/{self.query_id} ({self.policy})"


class PackedPolicy(models.Model):
    """A consensus policy the packed rows (RankedGrades) have been filled for. When the
    code registers a policy missing here, judgements.packed marks every query stale and
    adds it, so that the next fill writes its rows (see judgements.packed)."""

    name = models.CharField(max_length=16, primary_key=True)

    def __str__(self) -> str:
        return self.name


class QueryLog(models.Model):
    """One query's human grade events as spans of time (judgements/sql/query_log.sql,
    kept by triggers on the log in the writer's transaction): for every grade event,
    when it was recorded (``starts``) and when its rater's next event on the pair was
    (``ends``; the largest int64 for none), so that its grade is that rater's current
    answer at every moment from start (included) to end (excluded). Spans are in pair
    order (``keys``, query id << 32 | document id), each pair's by grade; times are
    microseconds since 2000-01-01 UTC, as binary COPY sends them; ``raters`` holds each
    span's rater; all big-endian, int64 but ``grades`` (int16) and ``raters`` (int32).
    Past moments are replayed from these rows (``judgements.query_log``)."""

    # No foreign keys: a project's deletion removes the rows first (judgements.bulk), and
    # a bulk load's rebuild would check each of its queries.
    query = models.OneToOneField(
        Query, on_delete=models.CASCADE, primary_key=True, related_name="+", db_constraint=False
    )
    project = models.ForeignKey(
        Project,
        on_delete=models.DO_NOTHING,
        related_name="+",
        db_constraint=False,
        db_index=False,
    )
    keys = models.BinaryField(default=b"")
    starts = models.BinaryField(default=b"")
    ends = models.BinaryField(default=b"")
    grades = models.BinaryField(default=b"")
    raters = models.BinaryField(default=b"")

    class Meta:
        indexes = [models.Index(fields=["project", "query"], name="query_log_project_idx")]

    def __str__(self) -> str:
        return f"log of query {self.query_id}"
