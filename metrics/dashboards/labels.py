"""Metric parameters in words, for forms, parameter lines and chart captions."""

from collections.abc import Iterator, Mapping

from metrics.core.consensus import policy_labels
from metrics.registry import MetricSpec

GAIN_LABELS = {"exponential": "exponential (2^rel \N{MINUS SIGN} 1)", "linear": "linear (rel)"}
DISCOUNT_LABELS = {"log2": "log2(rank + 1)", "rank": "rank"}
IDEAL_LABELS = {"judged": "all judged documents", "returned": "returned hits only"}
DEPTH_LABELS = {"cut": "cut at k", "full": "full (not cut at k)"}
# "remove" is judged-only NDCG: trec_eval -J, Sakai's condensed lists (metrics.core.ndcg).
UNJUDGED_LABELS = {"zero": "count as grade 0", "remove": "removed: judged only (trec_eval -J)"}
NEGATIVE_LABELS = {
    "zero": "count as 0 (trec_eval)",
    "penalise": "penalise (min-max, worst to best ordering)",
}
WEIGHT_LABELS = {
    "queries": "each query once",
    "traffic": "each query by its traffic in the search log",
}
MEAN_OVER_LABELS = {
    "judged": "judged queries (trec_eval)",
    "all": "all queries, unjudged as 0 (trec_eval -c)",
}


class _PolicyLabels(Mapping):
    """The consensus policies' short labels, read from metrics.core.consensus on every
    use, so that a policy registered there shows everywhere at once."""

    def __getitem__(self, name: str) -> str:
        return policy_labels()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(policy_labels())

    def __len__(self) -> int:
        return len(policy_labels())


CONSENSUS_LABELS = _PolicyLabels()

# Each choice parameter of MetricSpec: its form label and its values in words.
PARAMETER_LABELS = {
    "gain": ("Gain", GAIN_LABELS),
    "discount": ("Discount", DISCOUNT_LABELS),
    "ideal": ("Ideal", IDEAL_LABELS),
    "ideal_depth": ("Ideal depth", DEPTH_LABELS),
    "unjudged": ("Unjudged", UNJUDGED_LABELS),
    "consensus": ("Consensus", CONSENSUS_LABELS),
    "negative": ("Negative grades", NEGATIVE_LABELS),
    "mean_over": ("Mean over", MEAN_OVER_LABELS),
    "weight": ("Weight", WEIGHT_LABELS),
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
        f"negative grades {NEGATIVE_LABELS[spec.negative]}",
        f"mean over {MEAN_OVER_LABELS[spec.mean_over]}",
        f"weight={spec.weight}: {WEIGHT_LABELS[spec.weight]}",
    ]


# The binary and cascade measures the API computes beside NDCG
# (metrics.dashboards.measures.binary_and_cascade_measures), by their names there.
MEASURES = {
    "precision": "P",
    "average_precision": "AP",
    "reciprocal_rank": "RR",
    "err": "ERR",
}


def measure_label(spec: MetricSpec, name: str) -> str:
    """A measure's short name with its parameters, as ``MetricSpec.label`` names NDCG:
    ``P@10``, ``judged-only AP@5``, ``RR`` without a cut-off.

    >>> measure_label(MetricSpec(k=5), "err"), measure_label(MetricSpec(k=None), "precision")
    ('ERR@5', 'P')
    >>> measure_label(MetricSpec(unjudged="remove"), "average_precision")
    'judged-only AP@10'
    """
    plain = MEASURES[name] + (f"@{spec.k}" if spec.k else "")
    return f"judged-only {plain}" if spec.unjudged == "remove" else plain


def measures_line(spec: MetricSpec, names, *, relevant_from: float, max_grade: int) -> str:
    """What the measures beside NDCG mean, in words, for the line printed under them."""
    if not names:
        return ""
    labels = ", ".join(measure_label(spec, name) for name in names)
    return (
        f"{labels}: trec_eval's definitions, a hit relevant from consensus grade "
        f"{relevant_from:g} (ERR graded on the 0 to {max_grade} scale); P without k is not "
        "defined (—); gain, discount and ideal are NDCG's parameters only"
    )
