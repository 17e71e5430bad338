"""Named metric variants: every parameter that changes the number is in the name.

A stored metric point records ``MetricSpec.name``, e.g.
``ndcg@10 exponential log2 judged cut zero mean``, so a value can never be read
without its gain, discount, ideal source, ideal depth, unjudged policy and the
consensus policy that turned raters' grades into one grade.
"""

from dataclasses import asdict, dataclass, replace

GAINS = ("exponential", "linear")
DISCOUNTS = ("log2", "rank")
IDEALS = ("judged", "returned")
IDEAL_DEPTHS = ("cut", "full")
UNJUDGED = ("zero", "remove")
CONSENSUS = ("mean", "median", "majority", "quepid")


@dataclass(frozen=True)
class MetricSpec:
    k: int | None = 10
    gain: str = "exponential"
    discount: str = "log2"
    ideal: str = "judged"
    ideal_depth: str = "cut"
    unjudged: str = "zero"
    consensus: str = "mean"

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
            "consensus": CONSENSUS,
        }

    @property
    def name(self) -> str:
        at = f"@{self.k}" if self.k else ""
        rest = (self.gain, self.discount, self.ideal, self.ideal_depth, self.unjudged)
        return f"ndcg{at} {' '.join(rest)} {self.consensus}"

    @property
    def label(self) -> str:
        """Short human form for tables: ``NDCG@10``."""
        return f"NDCG@{self.k}" if self.k else "NDCG"

    @classmethod
    def parse(cls, name: str) -> "MetricSpec":
        """Inverse of ``name``; raises ValueError naming what is wrong."""
        parts = name.split()
        if len(parts) != 7 or not parts[0].startswith("ndcg"):
            raise ValueError(f"{name!r} is not a metric name like {cls().name!r}")
        at = parts[0].removeprefix("ndcg")
        if at and not (at.startswith("@") and at[1:].isdigit()):
            raise ValueError(f"{parts[0]!r} should be ndcg or ndcg@K")
        k = int(at[1:]) if at else None
        return cls(k, *parts[1:])

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
    )


def stored_specs(project) -> list[MetricSpec]:
    """The variants kept as a time series; other variants are computed on request."""
    return [project_spec(project)]
