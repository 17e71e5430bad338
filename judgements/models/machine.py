"""Machine judges, their runs and what each answer cost (issue 17).

Their pages, runs and certification live in ``judgements.machine``.
"""

from decimal import Decimal
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.urls import reverse
from django.utils import timezone

from config import outbound

DEFAULT_PROMPT = """You are a search quality rater. Grade how well the document answers the query.

Query: {query}
Information need: {description}

Document
Title: {title}
URL: {url}
Snippet: {snippet}
Fields: {fields}

Grades:
{scale}

Guidelines:
{guidelines}

Answer with JSON only: {{"grade": <one of {grades}>, "rationale": "<one sentence>"}}"""

ENV_NAME = RegexValidator(
    r"^[A-Za-z_][A-Za-z0-9_]*$", "An environment variable name: letters, digits and _."
)


def key_variable_problem(name: str) -> str | None:
    """Why a judge may not read its key from the variable ``name``, or None: only names
    with the operator's prefix (``MACHINE_JUDGE_KEY_PREFIX``) can be named, so that no
    analyst can have the server send its own secrets (SECRET_KEY, DATABASE_URL, PATH)."""
    prefix = settings.MACHINE_JUDGE_KEY_PREFIX
    if name and not (name.startswith(prefix) and len(name) > len(prefix)):
        return (
            f"{name} cannot be named: a judge's key variable must start with {prefix} "
            f"(e.g. {prefix}OPENAI), so that no other variable of the server is sent out; "
            "or enter the key itself, which is stored encrypted."
        )
    return None


def base_url_problem(url: str) -> str | None:
    """Why the outbound policy (config.outbound) refuses ``url``, or None: checked when a
    judge is saved, and again on the address of every connection it makes. A name that
    does not resolve now is let through (an imported judge's ``.invalid`` host, a model
    server not up yet): it is refused where it connects if it resolves inwards then."""
    try:
        outbound.check_url(url)
    except outbound.OutboundRefused as refused:
        return f"The base URL cannot be used: {refused}."
    except outbound.HostNotFound:
        pass
    if urlsplit(url).username or urlsplit(url).password:
        return "Put the key in the key fields, not in the URL."
    return None


def validate_key_variable(name: str) -> None:
    if problem := key_variable_problem(name):
        raise ValidationError(problem)


MAX_CONCURRENCY = 64


class MachineJudge(models.Model):
    """An OpenAI-compatible chat-completions model that grades a project's pairs, or a
    click model over the project's search log (``kind`` "clicks", searchlogs.click_judge:
    ``model`` names it, "pbm" or "coec"; it needs no endpoint).

    The API key is either entered in the app and stored sealed (``api_key_encrypted``,
    config.encryption; write-only, never shown again), or read from the worker's
    environment variable ``api_key_env`` names, which must start with the operator's
    ``MACHINE_JUDGE_KEY_PREFIX``; neither for local servers that want none.
    ``key_problem`` says why the judge cannot be asked until its key is set again
    (migration 0035 cleared variables without the prefix).
    """

    class Kind(models.TextChoices):
        LLM = "llm", "language model"
        CLICKS = "clicks", "click model over the search log"

    kind = models.CharField(max_length=8, choices=Kind, default=Kind.LLM)
    min_impressions = models.PositiveIntegerField(
        default=10, help_text="Click judges: fewer impressions of a pair make it a can't tell."
    )
    project = models.ForeignKey(
        "judgements.Project", on_delete=models.CASCADE, related_name="machine_judges"
    )
    # The judge's own account: its events name it as their rater.
    rater = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="machine_judge"
    )
    name = models.CharField(max_length=100)
    base_url = models.URLField(
        "base URL",
        max_length=500,
        blank=True,  # A click judge has none; a language model's is required (clean).
        help_text="The OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 (Ollama).",
    )
    model = models.CharField(max_length=200)
    api_key_env = models.CharField(
        "API key variable",
        max_length=100,
        blank=True,
        validators=[ENV_NAME, validate_key_variable],
        help_text="Name of the environment variable holding the key (it must start with "
        "the prefix the operator set, MACHINE_JUDGE_KEY_PREFIX); empty for none.",
    )
    # The key entered in the app, sealed with config.encryption; never shown.
    api_key_encrypted = models.TextField(blank=True, editable=False)
    key_problem = models.CharField(
        max_length=300,
        blank=True,
        editable=False,
        help_text="Why the judge cannot be asked until its key is set again.",
    )
    prompt_template = models.TextField(default=DEFAULT_PROMPT)
    temperature = models.FloatField(
        default=0.0, validators=[MinValueValidator(0.0), MaxValueValidator(2.0)]
    )
    concurrency = models.PositiveSmallIntegerField(
        default=4, validators=[MinValueValidator(1), MaxValueValidator(MAX_CONCURRENCY)]
    )
    timeout_seconds = models.FloatField(
        default=60.0, validators=[MinValueValidator(0.1), MaxValueValidator(600.0)]
    )
    max_retries = models.PositiveSmallIntegerField(
        default=3, validators=[MaxValueValidator(10)], help_text="Tries after the first."
    )
    cost_input_per_1k = models.DecimalField(
        "cost per 1k input tokens",
        max_digits=12,
        decimal_places=6,
        default=Decimal(0),
        validators=[MinValueValidator(Decimal(0))],
    )
    cost_output_per_1k = models.DecimalField(
        "cost per 1k output tokens",
        max_digits=12,
        decimal_places=6,
        default=Decimal(0),
        validators=[MinValueValidator(Decimal(0))],
    )
    demo = models.BooleanField(
        default=False, help_text="A demo judge: its grades come from a fixed rule, not a model."
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="machine_judge_unique_name"),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("judgements:machine_judge", args=[self.project.slug, self.pk])

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key_encrypted)

    def clean(self) -> None:
        if self.kind != self.Kind.LLM:
            return
        if not self.base_url:
            raise ValidationError({"base_url": "A language model judge needs its endpoint."})
        if not self.demo and (problem := base_url_problem(self.base_url)):
            raise ValidationError({"base_url": problem})

    def cost(self, tokens_in: int, tokens_out: int) -> Decimal:
        """What one answer cost, from its tokens and the judge's prices."""
        return (self.cost_input_per_1k * tokens_in + self.cost_output_per_1k * tokens_out) / 1000


class MachineGate(models.Model):
    """Whose grades enter a project's consensus: humans only (the default, also when a
    project has no row), or humans and every machine judge certified at ``min_alpha``
    or more on at least ``min_gold`` pairs with a human consensus."""

    class Admit(models.TextChoices):
        HUMANS = "humans", "humans only"
        CERTIFIED = "certified", "humans and certified machine judges"

    project = models.OneToOneField(
        "judgements.Project", on_delete=models.CASCADE, related_name="machine_gate"
    )
    admit = models.CharField(max_length=16, choices=Admit, default=Admit.HUMANS)
    min_alpha = models.FloatField(
        "alpha threshold",
        default=0.6,
        validators=[MinValueValidator(-1.0), MaxValueValidator(1.0)],
        help_text="Krippendorff's alpha (ordinal) against the human consensus.",
    )
    min_gold = models.PositiveIntegerField(
        "gold pairs",
        default=50,
        validators=[MinValueValidator(1)],
        help_text="Pairs with a human consensus the judge must have graded.",
    )

    def __str__(self) -> str:
        return f"{self.project}: {self.get_admit_display()}"


class MachineRun(models.Model):
    """One pass of a judge over the pool pairs it has not answered, in queue order."""

    class Status(models.TextChoices):
        RUNNING = "running", "running"
        PAUSED = "paused", "paused"
        DONE = "done", "done"
        BUDGET = "budget", "stopped: budget reached"

    judge = models.ForeignKey(MachineJudge, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(max_length=16, choices=Status, default=Status.RUNNING)
    max_pairs = models.PositiveIntegerField(
        null=True, blank=True, help_text="Budget in pairs; empty: every unanswered pool pair."
    )
    max_cost = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True, help_text="Budget in money."
    )
    total = models.PositiveIntegerField(default=0, help_text="Pairs the run took on.")
    graded = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0, help_text="Recorded as can't tell.")
    tokens_in = models.BigIntegerField(default=0)
    tokens_out = models.BigIntegerField(default=0)
    cost = models.DecimalField(max_digits=14, decimal_places=6, default=Decimal(0))
    reason = models.CharField(
        max_length=500, blank=True, help_text="Why the run stopped or paused by itself."
    )
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Renewed by every task working on the run (judgements/leases.py); empty while the
    # run waits for a task. A running run whose lease has run out has lost its workers.
    lease_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # One open run per judge: a second would take the same pairs.
            models.UniqueConstraint(
                fields=["judge"],
                condition=models.Q(status__in=["running", "paused"]),
                name="machine_run_one_open",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.judge} run {self.pk} ({self.status})"

    @property
    def answered(self) -> int:
        return self.graded + self.failed

    @property
    def percent(self) -> int:
        return round(100 * self.answered / self.total) if self.total else 100

    @property
    def open(self) -> bool:
        return self.status in (self.Status.RUNNING, self.Status.PAUSED)

    @property
    def worker_lost(self) -> bool:
        """Running, but no task renews its lease: its workers died (a worker hands its
        claims back and queues it again, judgements.leases)."""
        return (
            self.status == self.Status.RUNNING
            and self.lease_until is not None
            and self.lease_until < timezone.now()
        )


class MachineRunItem(models.Model):
    """One pair a run will grade. A worker claims it (``claim``, a fresh token) before
    asking the model, and records the answer only while its claim still stands, so two
    workers never both record the same pair."""

    class Status(models.TextChoices):
        PENDING = "pending", "waiting"
        CLAIMED = "claimed", "with a worker"
        DONE = "done", "answered"
        SKIPPED = "skipped", "not asked: budget reached"

    run = models.ForeignKey(MachineRun, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField(help_text="The pair's place in the queue order.")
    query = models.ForeignKey("judgements.Query", on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey("judgements.Document", on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=16, choices=Status, default=Status.PENDING)
    claim = models.UUIDField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "query", "document"], name="machine_run_item_unique"
            ),
        ]
        indexes = [
            models.Index(
                fields=["run", "position"],
                condition=models.Q(status__in=["pending", "claimed"]),
                name="machine_run_item_open_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id}: {self.query_id}/{self.document_id} ({self.status})"


class MachineAnswer(models.Model):
    """What stands behind one machine judge's event: the model, the prompt's version
    (a hash of its template), the rationale, tokens, latency and cost, or why it failed
    (then the event is a can't tell with that reason as its note)."""

    judgement = models.OneToOneField(
        "judgements.Judgement", on_delete=models.CASCADE, related_name="machine_answer"
    )
    judge = models.ForeignKey(MachineJudge, on_delete=models.CASCADE, related_name="answers")
    run = models.ForeignKey(
        MachineRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="answers"
    )
    model = models.CharField(max_length=200)
    prompt_version = models.CharField(max_length=16, help_text="sha256 of the template, 12 hex.")
    rationale = models.TextField(blank=True)
    error = models.TextField(blank=True, help_text="Why no grade came back; empty if one did.")
    attempts = models.PositiveSmallIntegerField(default=1)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal(0))

    def __str__(self) -> str:
        return f"{self.judge}: {self.model} ({self.prompt_version})"


class MachineCanary(models.Model):
    """One answer of a judge to a trap: a judged pair's document rewritten to fool it.

    ``stuffing``: the query's terms stuffed into a document humans found irrelevant.
    ``injection``: an instruction to answer the top grade planted in a document field.
    The judge passes when its grade is not above the human consensus of the original.
    """

    class Kind(models.TextChoices):
        STUFFING = "stuffing", "keyword stuffing"
        INJECTION = "injection", "injected instruction"

    judge = models.ForeignKey(MachineJudge, on_delete=models.CASCADE, related_name="canaries")
    kind = models.CharField(max_length=16, choices=Kind)
    query = models.ForeignKey("judgements.Query", on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey("judgements.Document", on_delete=models.CASCADE, related_name="+")
    shown = models.JSONField(help_text="The document as the judge was shown it.")
    human_grade = models.SmallIntegerField(help_text="The original pair's human consensus.")
    grade = models.SmallIntegerField(null=True, blank=True)
    passed = models.BooleanField(null=True, help_text="Empty when the judge gave no grade.")
    model = models.CharField(max_length=200)
    prompt_version = models.CharField(max_length=16)
    rationale = models.TextField(blank=True)
    error = models.TextField(blank=True)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal(0))
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.judge} {self.kind} canary: {self.grade}"
