"""A project: its grade scale, its metric defaults and the choices they name."""

import itertools

from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.urls import reverse
from django.utils import timezone

from metrics.core.consensus import policy_choices


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
    REMOVE = "remove", "removed: judged only (trec_eval -J)"


class NegativeGrades(models.TextChoices):
    """What a negative grade does to NDCG: see metrics/core/ndcg.py."""

    ZERO = "zero", "count as 0 (trec_eval)"
    PENALISE = "penalise", "penalise (min-max between the worst and the best ordering)"


class MeanOver(models.TextChoices):
    """Which queries a mean over queries counts."""

    JUDGED = "judged", "queries with a judgement (trec_eval)"
    ALL = "all", "all queries, unjudged ones as 0 (trec_eval -c)"


# Bounds of a project's settings: the rating queue and the metrics stay fast within them.
MAX_JUDGES_PER_PAIR = 100
MAX_DEPTH = 1000
MAX_GRADES = 20
# 2 ** 100 is still an exact float, so exponential gains stay finite and exact.
MAX_GRADE_MAGNITUDE = 100
SCALE_KEYS = {"value", "label", "description"}
# Addresses under projects/ that are pages, not projects (judgements/urls.py).
RESERVED_SLUGS = {"new", "guidelines-preview"}
# What the rating page said under "Can't tell" before each project had its own text.
CANT_TELL_TEXT = "The listing does not say enough."


class Project(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    scale = models.JSONField(
        default=default_scale,
        help_text="Grades as a list of {value, label, description}, lowest first.",
    )
    guidelines = models.TextField(blank=True, help_text="Markdown shown to raters.")
    cant_tell_text = models.CharField(
        "“Can't tell” explanation",
        max_length=300,
        default=CANT_TELL_TEXT,
        help_text="Shown to raters under the “Can't tell” button: when to choose it.",
    )
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
    # Choices from metrics.core.consensus (a callable: a new policy needs no migration).
    consensus = models.CharField(max_length=16, choices=policy_choices, default="mean")
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
    from judgements.models.log import Judgement  # the log refers to projects

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
