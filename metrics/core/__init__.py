"""The numeric core of Relevance Judge: NDCG and friends, with numpy and the standard library only.

Per query, for the "show the working" table::

    from metrics.core import ideal_grades, ndcg
    ideal = ideal_grades("judged", ranked_grades=ranked, judged_grades=judged)
    result = ndcg(ranked, ideal, k=10, gain="exponential", discount="log2")
    result.ndcg, result.rows

(with ``negative="penalise"`` passed to both, negative grades lower DCG and NDCG is
normalised between the worst and the best ordering).

For a whole result list in one vectorised call::

    from metrics.core import ndcg_batch
    batch = ndcg_batch(grades, offsets, k=10, ideal_grades=judged, ideal_offsets=judged_offsets)
    batch.ndcg, batch.mean, batch.zero_idcg_count

Definitions (gains, discounts, negative and fractional grades, IDCG = 0, the
min-max NDCG of ``negative="penalise"``) are documented in
:mod:`metrics.core.gains` and :mod:`metrics.core.ndcg`. Nothing
here imports Django, so the core runs and is tested without a database.
"""

import importlib
import sys
from typing import TYPE_CHECKING

if sys.argv[:1] == ["-m"] and "numpy" not in sys.modules:
    # Run as ``python -m metrics.core`` (argv[0] is "-m" while Python finds the
    # package): set up the short-lived process before numpy loads.
    from metrics.core.process import prepare_command_process

    prepare_command_process()

if TYPE_CHECKING:
    from metrics.core.aggregate import (
        MEANS_OVER,
        MeanOver,
        NdcgSummary,
        QueryMean,
        mean_ndcg,
        mean_over,
        query_mean,
        summarize,
    )
from metrics.core.batch import BatchNdcgResult, grade_counts, idcg_from_counts, ndcg_batch
from metrics.core.batch_measures import (
    average_precision_batch,
    expected_reciprocal_rank_batch,
    precision_batch,
    reciprocal_rank_batch,
)
from metrics.core.gains import (
    NEGATIVES,
    Discount,
    Gain,
    Negative,
    discount_values,
    gain_values,
    signed_gain_values,
)
from metrics.core.ideal import IdealSource, ideal_grades
from metrics.core.measures import (
    average_precision,
    expected_reciprocal_rank,
    precision,
    reciprocal_rank,
)
from metrics.core.ndcg import (
    IdealDepth,
    NdcgResult,
    RankRow,
    Unjudged,
    cumulative_gain,
    dcg,
    ndcg,
)
from metrics.core.segments import offsets_from_lengths

__all__ = [
    "MEANS_OVER",
    "NEGATIVES",
    "BatchNdcgResult",
    "Discount",
    "Gain",
    "IdealDepth",
    "IdealSource",
    "MeanOver",
    "NdcgResult",
    "NdcgSummary",
    "Negative",
    "QueryMean",
    "RankRow",
    "Unjudged",
    "average_precision",
    "average_precision_batch",
    "cumulative_gain",
    "dcg",
    "discount_values",
    "expected_reciprocal_rank",
    "expected_reciprocal_rank_batch",
    "gain_values",
    "grade_counts",
    "idcg_from_counts",
    "ideal_grades",
    "mean_ndcg",
    "mean_over",
    "ndcg",
    "ndcg_batch",
    "offsets_from_lengths",
    "precision",
    "precision_batch",
    "query_mean",
    "reciprocal_rank",
    "reciprocal_rank_batch",
    "signed_gain_values",
    "summarize",
]

# The means over queries load when first asked for: ``python -m metrics.core``
# does not use them, and their module costs it a few milliseconds to load.
_AGGREGATE = frozenset(
    {
        "MEANS_OVER",
        "MeanOver",
        "NdcgSummary",
        "QueryMean",
        "mean_ndcg",
        "mean_over",
        "query_mean",
        "summarize",
    }
)


def __getattr__(name: str) -> object:
    if name not in _AGGREGATE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("metrics.core.aggregate"), name)
    globals()[name] = value
    return value
