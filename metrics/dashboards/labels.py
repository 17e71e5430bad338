"""Metric parameters in words, for forms, parameter lines and chart captions."""

from metrics.registry import MetricSpec

GAIN_LABELS = {"exponential": "exponential (2^rel \N{MINUS SIGN} 1)", "linear": "linear (rel)"}
DISCOUNT_LABELS = {"log2": "log2(rank + 1)", "rank": "rank"}
IDEAL_LABELS = {"judged": "all judged documents", "returned": "returned hits only"}
DEPTH_LABELS = {"cut": "cut at k", "full": "full (not cut at k)"}
UNJUDGED_LABELS = {"zero": "count as grade 0", "remove": "removed before ranking"}
CONSENSUS_LABELS = {
    "mean": "mean",
    "median": "median",
    "majority": "majority",
    "quepid": "Quepid (third-highest)",
}

# Each choice parameter of MetricSpec and the words for its values: the forms take their
# choices' labels from here (a value without words is shown as it is).
CHOICE_LABELS = {
    "gain": GAIN_LABELS,
    "discount": DISCOUNT_LABELS,
    "ideal": IDEAL_LABELS,
    "ideal_depth": DEPTH_LABELS,
    "unjudged": UNJUDGED_LABELS,
    "consensus": CONSENSUS_LABELS,
}


def parameter_line(spec: MetricSpec) -> list[str]:
    """The parameters behind a number, in words, for the line printed beside it."""
    return [
        spec.label,
        f"gain {GAIN_LABELS[spec.gain]}",
        f"discount {DISCOUNT_LABELS[spec.discount]}",
        f"ideal: {IDEAL_LABELS[spec.ideal]}",
        f"ideal depth {DEPTH_LABELS[spec.ideal_depth]}",
        f"unjudged hits {UNJUDGED_LABELS[spec.unjudged]}",
        f"consensus {CONSENSUS_LABELS[spec.consensus]}",
    ]
