"""Named metric variants: every parameter that changes the number is in the name.

A stored metric point records ``MetricSpec.name``, e.g.
``ndcg@10 exponential log2 judged cut zero mean zero judged``, so a value can never
be read without its gain, discount, ideal source, ideal depth, unjudged policy, the
consensus policy that turned raters' grades into one grade, the rule for negative
grades and the queries its mean is over: the fields of ``MetricSpec`` in order.

Names stored before the last two parameters existed have seven words; they were
computed with negative grades at 0 and means over every query, so ``parse`` reads
them as ``negative="zero"``, ``mean_over="all"`` (and migration 0003 of the metrics
app renamed the stored ones so).
"""

from dataclasses import asdict, dataclass, fields, replace

from metrics.core.consensus import policy_names

GAINS = ("exponential", "linear")
DISCOUNTS = ("log2", "rank")
IDEALS = ("judged", "returned")
IDEAL_DEPTHS = ("cut", "full")
UNJUDGED = ("zero", "remove")
# Negative grades: gain 0 as trec_eval, or they penalise (min-max NDCG; metrics.core.ndcg).
NEGATIVE = ("zero", "penalise")
# Which queries a mean is over: those with at least one current grade (trec_eval's
# default), or all, unjudged ones counting 0 (as trec_eval -c counts missing ones).
MEAN_OVER = ("judged", "all")
# What the seven-word names of before negative and mean_over meant by them.
LEGACY_MEANING = {"negative": "zero", "mean_over": "all"}
# How the mean weighs its queries: each once, or by its traffic in the search log (the
# results pages it had when it was drawn from it; searchlogs.sampling). The default is
# left out of the name, so that every name stored before it existed still reads the
# same; "traffic" is the name's last word.
WEIGHTS = ("queries", "traffic")


@dataclass(frozen=True)
class MetricSpec:
    k: int | None = 10
    gain: str = "exponential"
    discount: str = "log2"
    ideal: str = "judged"
    ideal_depth: str = "cut"
    unjudged: str = "zero"
    consensus: str = "mean"
    negative: str = "zero"
    mean_over: str = "judged"
    weight: str = "queries"

    def __post_init__(self) -> None:
        if self.k is not None and self.k < 1:
            raise ValueError(f"k must be at least 1, not {self.k}")
        for field, allowed in self._choices().items():
            if getattr(self, field) not in allowed:
                raise ValueError(f"{field} must be one of {', '.join(allowed)}")

    @staticmethod
    def _choices() -> dict[str, tuple[str, ...]]:
        return {
            "gain": GAINS,
            "discount": DISCOUNTS,
            "ideal": IDEALS,
            "ideal_depth": IDEAL_DEPTHS,
            "unjudged": UNJUDGED,
            "consensus": policy_names(),
            "negative": NEGATIVE,
            "mean_over": MEAN_OVER,
            "weight": WEIGHTS,
        }

    @property
    def name(self) -> str:
        at = f"@{self.k}" if self.k else ""
        words = [getattr(self, field) for field in self._choices()]
        if self.weight == WEIGHTS[0]:
            words.pop()
        return " ".join([f"ndcg{at}", *words])

    @property
    def label(self) -> str:
        """Short human form for tables: ``NDCG@10``; ``judged-only NDCG@10`` when unjudged
        hits are removed first (trec_eval -J), so the number's own label says so.

        >>> MetricSpec().label, MetricSpec(k=None, unjudged="remove").label
        ('NDCG@10', 'judged-only NDCG')
        """
        plain = f"NDCG@{self.k}" if self.k else "NDCG"
        return f"judged-only {plain}" if self.unjudged == "remove" else plain

    @classmethod
    def parse(cls, name: str) -> "MetricSpec":
        """Inverse of ``name`` (seven-word names of before ``negative`` and ``mean_over``
        included); raises ValueError naming what is wrong."""
        parts = name.split()
        choices = list(cls._choices())
        if len(parts) == len(choices):  # The default weight is not named.
            parts.append(WEIGHTS[0])
        legacy = len(parts) == len(choices) - len(LEGACY_MEANING)
        if not (legacy or len(parts) == 1 + len(choices)) or not parts[0].startswith("ndcg"):
            raise ValueError(f"{name!r} is not a metric name like {cls().name!r}")
        at = parts[0].removeprefix("ndcg")
        if at and not (at.startswith("@") and at[1:].isdigit()):
            raise ValueError(f"{parts[0]!r} should be ndcg or ndcg@K")
        named = dict(zip(choices, parts[1:], strict=False))
        if legacy:
            named.update(LEGACY_MEANING, weight=WEIGHTS[0])
        return cls(k=int(at[1:]) if at else None, **named)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """Every parameter, in order: ``k`` and the choices of ``_choices()``."""
        return tuple(field.name for field in fields(cls))

    def as_dict(self) -> dict:
        return asdict(self)

    def with_changes(self, **changes) -> "MetricSpec":
        return replace(self, **changes)


def project_spec(project) -> MetricSpec:
    """The project's default metric, from its settings."""
    return MetricSpec(
        k=project.metric_k,
        gain=project.metric_gain,
        discount=project.metric_discount,
        ideal=project.metric_ideal,
        ideal_depth=project.metric_ideal_depth,
        unjudged=project.metric_unjudged,
        consensus=project.consensus,
        negative=project.metric_negative,
        mean_over=project.metric_mean_over,
    )


def stored_specs(project) -> list[MetricSpec]:
    """The variants kept as a time series; other variants are computed on request."""
    return [project_spec(project)]
