"""The judging data: projects, queries, documents, result lists, hits and grades.

Judgements are append-only events. A rater who changes their mind adds a new
event; the newest event per rater and pair is that rater's current answer. A
database trigger (see migration 0002) refuses UPDATE on the table, so any NDCG of
the past can be recomputed from the log.
"""

import itertools
import uuid

from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.urls import reverse
from django.utils import timezone

from judgements.querysets import HitQuerySet, JudgementQuerySet


def default_scale() -> list[dict]:
    return [
        {"value": 0, "label": "Irrelevant", "description": "Does not answer the query."},
        {
            "value": 1,
            "label": "Partially relevant",
            "description": "Related, but misses the need.",
        },
        {"value": 2, "label": "Relevant", "description": "A good answer to the query."},
        {"value": 3, "label": "Perfect", "description": "Exactly what the searcher wanted."},
    ]


class Gain(models.TextChoices):
    EXPONENTIAL = "exponential", "exponential (2^rel - 1)"
    LINEAR = "linear", "linear (rel)"


class Discount(models.TextChoices):
    LOG2 = "log2", "log2(rank + 1)"
    RANK = "rank", "rank"


class IdealSource(models.TextChoices):
    JUDGED = "judged", "all judged documents"
    RETURNED = "returned", "returned hits only"


class IdealDepth(models.TextChoices):
    CUT = "cut", "cut at k"
    FULL = "full", "all judged grades"


class Unjudged(models.TextChoices):
    ZERO = "zero", "count as irrelevant"
    REMOVE = "remove", "drop from the ranking"


class NegativeGrades(models.TextChoices):
    """What a negative grade does to NDCG: see metrics/core/ndcg.py."""

    ZERO = "zero", "count as 0 (trec_eval)"
    PENALISE = "penalise", "penalise (min-max between the worst and the best ordering)"


class MeanOver(models.TextChoices):
    """Which queries a mean over queries counts."""

    JUDGED = "judged", "queries with a judgement (trec_eval)"
    ALL = "all", "all queries, unjudged ones as 0 (trec_eval -c)"


class Consensus(models.TextChoices):
    """How a pair's current grades become one grade: see metrics/core/consensus.py."""

    MEAN = "mean", "mean"
    MEDIAN = "median", "median"
    MAJORITY = "majority", "majority (ties to the lowest grade)"
    QUEPID = "quepid", "Quepid's rule (mean under 3 grades, else the lowest of the top 3)"


# Bounds of a project's settings: the rating queue and the metrics stay fast within them.
MAX_JUDGES_PER_PAIR = 100
MAX_DEPTH = 1000
MAX_GRADES = 20
# 2 ** 100 is still an exact float, so exponential gains stay finite and exact.
MAX_GRADE_MAGNITUDE = 100
SCALE_KEYS = {"value", "label", "description"}
# Addresses under projects/ that are pages, not projects (judgements/urls.py).
RESERVED_SLUGS = {"new", "guidelines-preview"}


class Project(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    scale = models.JSONField(
        default=default_scale,
        help_text="Grades as a list of {value, label, description}, lowest first.",
    )
    guidelines = models.TextField(blank=True, help_text="Markdown shown to raters.")
    judges_per_pair = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(MAX_JUDGES_PER_PAIR)]
    )
    pool_depth = models.PositiveSmallIntegerField(
        default=10,
        help_text="Hits down to this rank in any result list are judged.",
        validators=[MinValueValidator(1), MaxValueValidator(MAX_DEPTH)],
    )
    metric_k = models.PositiveSmallIntegerField(
        "k", default=10, validators=[MinValueValidator(1), MaxValueValidator(MAX_DEPTH)]
    )
    metric_gain = models.CharField("gain", max_length=16, choices=Gain, default=Gain.EXPONENTIAL)
    metric_discount = models.CharField(
        "discount", max_length=16, choices=Discount, default=Discount.LOG2
    )
    metric_ideal = models.CharField(
        "ideal", max_length=16, choices=IdealSource, default=IdealSource.JUDGED
    )
    metric_ideal_depth = models.CharField(
        "ideal depth", max_length=16, choices=IdealDepth, default=IdealDepth.CUT
    )
    metric_unjudged = models.CharField(
        "unjudged hits", max_length=16, choices=Unjudged, default=Unjudged.ZERO
    )
    consensus = models.CharField(max_length=16, choices=Consensus, default=Consensus.MEAN)
    metric_negative = models.CharField(
        "negative grades", max_length=16, choices=NegativeGrades, default=NegativeGrades.ZERO
    )
    metric_mean_over = models.CharField(
        "mean over", max_length=16, choices=MeanOver, default=MeanOver.JUDGED
    )
    raters = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="rated_projects",
        help_text="Only these raters may grade the project; empty means every rater.",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(judges_per_pair__gte=1), name="project_judges_per_pair_gte_1"
            ),
            models.CheckConstraint(
                condition=models.Q(pool_depth__gte=1), name="project_pool_depth_gte_1"
            ),
            models.CheckConstraint(condition=models.Q(metric_k__gte=1), name="project_k_gte_1"),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("judgements:project", args=[self.slug])

    def clean(self) -> None:
        """Every rule of a project's settings beyond single fields: the page's form and
        the API's serializer both end here, so the two cannot disagree."""
        from metrics.registry import project_spec

        errors = {}
        if self.slug in RESERVED_SLUGS:
            errors["slug"] = [f"“{self.slug}” names a page; choose another slug."]
        scale = scale_errors(self.scale)
        if not scale and self.pk:
            scale = scale_in_use_errors(self)
        if scale:
            errors["scale"] = scale
        try:
            project_spec(self)
        except (TypeError, ValueError) as error:
            errors[NON_FIELD_ERRORS] = [f"The metric defaults are invalid: {error}."]
        if errors:
            raise ValidationError(errors)

    @property
    def grade_values(self) -> list[int]:
        return [step["value"] for step in self.scale]

    @property
    def max_grade(self) -> int:
        return max(self.grade_values)

    def grade_label(self, grade: int | None) -> str:
        if grade is None:
            return "Can't tell"
        labels = {step["value"]: step["label"] for step in self.scale}
        return labels.get(grade, str(grade))


def scale_errors(scale) -> list[str]:
    """Say what is wrong with a grading scale, in words an analyst can act on.

    A scale is a list of ``{value, label, description}``, lowest value first, values
    distinct whole numbers (negative ones allowed, for a "harmful" grade).
    """
    if not isinstance(scale, list) or len(scale) < 2:
        return ["The scale needs at least two grades."]
    if len(scale) > MAX_GRADES:
        return [f"The scale has {len(scale)} grades; at most {MAX_GRADES} are allowed."]
    errors = [
        error for number, step in enumerate(scale, 1) for error in _step_errors(number, step)
    ]
    if errors:
        return errors
    values = [step["value"] for step in scale]
    if len(set(values)) != len(values):
        return ["Grade values must be distinct."]
    for position, (lower, higher) in enumerate(itertools.pairwise(values), 2):
        if higher < lower:
            errors.append(
                f"Grades must be listed lowest first: grade {position} ({higher}) "
                f"comes after {lower}."
            )
    return errors


def _step_errors(position: int, step) -> list[str]:
    if not isinstance(step, dict):
        return [f"Grade {position} must be an object with value, label and description."]
    value, label = step.get("value"), step.get("label")
    errors = []
    if unknown := sorted(set(step) - SCALE_KEYS, key=str):
        errors.append(f"Grade {position} has unknown keys: {', '.join(map(str, unknown))}.")
    if isinstance(value, bool) or not isinstance(value, int):
        errors.append(f"Grade {position} needs an integer value.")
    elif abs(value) > MAX_GRADE_MAGNITUDE:
        limit = MAX_GRADE_MAGNITUDE
        errors.append(f"Grade {position}: {value} is outside -{limit} to {limit}.")
    if not isinstance(label, str) or not label.strip():
        errors.append(f"Grade {position} needs a label.")
    elif len(label) > 100:
        errors.append(f"Grade {position}: the label is longer than 100 characters.")
    description = step.get("description", "")
    if not isinstance(description, str) or len(description) > 1000:
        errors.append(
            f"Grade {position}: the description must be text of 1000 characters at most."
        )
    return errors


def scale_in_use_errors(project: "Project") -> list[str]:
    """Refuse to drop a grade value that judgement events of the project use.

    Only values the stored scale has and the new one lacks are counted, so that saving
    settings without removing a grade costs no look at the log.
    """
    stored = Project.objects.filter(pk=project.pk).values_list("scale", flat=True).first()
    kept = {step["value"] for step in project.scale}
    dropped = sorted({step["value"] for step in stored or []} - kept)
    if not dropped:
        return []
    used = dict(
        Judgement.objects.filter(
            query__project=project, kind=Judgement.Kind.GRADE, grade__in=dropped
        )
        .values_list("grade")
        .annotate(count=models.Count("id"))
        .order_by()
    )
    labels = {step["value"]: step.get("label", "") for step in stored}
    return [
        f"Grade {value} ({labels[value]}) cannot be removed: {_grades_use(used[value])} it."
        for value in dropped
        if used.get(value)
    ]


def _grades_use(count: int) -> str:
    return "1 grade in the log uses" if count == 1 else f"{count} grades in the log use"


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
        # A machine judge's answer (judgements.machine): out of every human number
        # (HUMAN_EVENT_SQL, migration 0018); the project's gate may admit it.
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


class PairGrade(models.Model):
    """The current grades of one judged (query, document) pair and their consensus under
    every policy, kept exact by database triggers on judgements (migration 0005).

    A row exists once any event was recorded for the pair; ``graded`` is 0 (and the
    consensus columns NULL) while no rater's current answer is a grade. The table holds
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
    mean = models.FloatField(null=True)
    median = models.FloatField(null=True)
    majority = models.FloatField(null=True)
    quepid = models.FloatField(null=True)

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
    graded = models.IntegerField(default=0, help_text="Current grades over all pairs.")
    judged = models.IntegerField(default=0, help_text="Pairs with a current grade.")

    class Meta:
        verbose_name_plural = "query grades"

    def __str__(self) -> str:
        return f"{self.query_id}: {self.judged} judged documents"


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
    policy = models.CharField(max_length=16, choices=Consensus.choices)
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


# Machine judges (issue 17) live in their own module; imported here so that they are
# models of this app.
from judgements.machine.models import (  # noqa: E402, F401
    MachineAnswer,
    MachineCanary,
    MachineGate,
    MachineJudge,
    MachineRun,
    MachineRunItem,
)
