"""NDCG of every query of a result list in one vectorised pass.

The definitions are those of :mod:`metrics.core.ndcg` (same gains, discounts,
ideal depths, unjudged handling, IDCG = 0 convention); only the layout
differs: flat arrays with per-query offsets (see :mod:`metrics.core.segments`).

The ideal DCG of integer grades needs no per-query sort. If a query has
``c_3`` documents of grade 3, ``c_2`` of grade 2 and so on, the ideal list
puts the grade-3 documents at ranks ``1 .. c_3``, the grade-2 ones at
``c_3 + 1 .. c_3 + c_2``, ... so with ``P`` the prefix sums of the discount
table, ``IDCG = sum_g gain(g) * (P[end_g] - P[start_g])``, with the ends
clipped at ``k`` for ``ideal_depth="cut"``. Fractional grades take a general
path that sorts each query's grades once.

With ``negative="penalise"`` the worst ordering's DCG is minus the ideal DCG of
the negative grades' magnitudes, computed the same way, and NDCG is normalised
min-max (:mod:`metrics.core.ndcg` states the definition). The default path
(``negative="zero"``) does none of this work.
"""

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from metrics.core.batch_dcg import (
    MAX_COUNTED_GRADE,
    grade_counts,
    idcg_from_counts,
    idcg_from_grades,
    judged_counts,
    ranked_dcg,
    ranked_dcg_and_judged,
    worst_dcg_from_grades,
)
from metrics.core.gains import Discount, Gain, Negative, check_discount, check_gain, check_negative
from metrics.core.ndcg import IDEAL_DEPTHS, UNJUDGED, IdealDepth, Unjudged, check_k
from metrics.core.segments import FloatArray, Int64Array, check_offsets

__all__ = [
    "MAX_COUNTED_GRADE",
    "BatchNdcgResult",
    "grade_counts",
    "idcg_from_counts",
    "idcg_from_grades",
    "judged_counts",
    "ndcg_batch",
    "ranked_dcg",
    "ranked_dcg_and_judged",
    "worst_dcg_from_grades",
]

# Queries handled per vectorised pass; see ndcg_batch.
BLOCK_QUERIES = 8192


@dataclass(frozen=True)
class BatchNdcgResult:
    """Per-query arrays of one result list, with the mean and the zero-IDCG count.

    ``min_dcg`` holds the worst ordering's DCG per query when negative grades
    penalise, and is None otherwise (where it would be 0 everywhere).
    """

    k: int | None
    dcg: FloatArray
    idcg: FloatArray
    ndcg: FloatArray
    judged: Int64Array
    retrieved: Int64Array
    min_dcg: FloatArray | None = None
    mean: float = field(init=False)
    zero_idcg_count: int = field(init=False)

    def __post_init__(self) -> None:
        mean = float(np.mean(self.ndcg)) if len(self.ndcg) else 0.0
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "zero_idcg_count", int(np.count_nonzero(self.all_irrelevant)))

    @property
    def all_irrelevant(self) -> np.ndarray:
        """Mask of the queries whose IDCG is 0, or equals the worst DCG when negative
        grades penalise (NDCG 0 by convention)."""
        if self.min_dcg is None:
            return self.idcg == 0.0
        return self.idcg == self.min_dcg

    @property
    def coverage(self) -> FloatArray:
        """Judged share of each query's top ``k`` hits; 0.0 where nothing was returned."""
        safe = np.maximum(self.retrieved, 1)
        return np.where(self.retrieved > 0, self.judged / safe, 0.0)


def ndcg_batch(
    ranked_grades: ArrayLike,
    offsets: ArrayLike,
    *,
    k: int | None,
    ideal_grades: ArrayLike | None = None,
    ideal_offsets: ArrayLike | None = None,
    ideal_counts: ArrayLike | None = None,
    gain: Gain = "exponential",
    discount: Discount = "log2",
    ideal_depth: IdealDepth = "cut",
    unjudged: Unjudged = "zero",
    negative: Negative = "zero",
) -> BatchNdcgResult:
    """NDCG of every query of a result list, without a Python loop per query.

    Parameters
    ----------
    ranked_grades : array-like of float, shape (n_hits,)
        Grades of all returned hits, query after query, each query in rank
        order. NaN marks an unjudged hit.
    offsets : array-like of int, shape (n_queries + 1,)
        Query ``q``'s hits are ``ranked_grades[offsets[q]:offsets[q + 1]]``.
    k : int or None
        Rank cut-off; None evaluates whole lists.
    ideal_grades, ideal_offsets : array-like, optional
        The grades each query's ideal is built from, in any order, flat with
        their own offsets: every judged grade of the query (the "judged"
        ideal), or ``ranked_grades, offsets`` again for the "returned" ideal.
    ideal_counts : array-like of int, shape (n_queries, n_levels), optional
        Instead of ``ideal_grades``: ``ideal_counts[q, g]`` judged documents
        of integer grade ``g`` for query ``q``. Give one of the two forms;
        ``negative="penalise"`` needs ``ideal_grades`` (counts hold no negative grade).
    gain : {"exponential", "linear"}, default="exponential"
    discount : {"log2", "rank"}, default="log2"
    ideal_depth : {"cut", "full"}, default="cut"
    unjudged : {"zero", "remove"}, default="zero"
    negative : {"zero", "penalise"}, default="zero"
        Negative grades give gain 0 (trec_eval), or keep their sign with NDCG
        normalised min-max between the worst and the best ordering.

    Returns
    -------
    result : BatchNdcgResult
        Per-query ``dcg``, ``idcg``, ``ndcg``, ``judged`` and ``retrieved``
        arrays (and ``min_dcg`` when negative grades penalise), plus ``mean``
        NDCG and ``zero_idcg_count``.

    References
    ----------
    .. [1] Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR
       techniques", ACM TOIS 20(4), 2002.
    .. [2] trec_eval, ``m_ndcg_cut.c`` (ideal DCG from per-level counts).

    Examples
    --------
    Worked examples A and C in one call, with the returned hits as the ideal:

    >>> grades = np.array([2, 3, 1, 2, 3, 2, 3, 0], dtype=float)
    >>> offsets = np.array([0, 4, 8])
    >>> exp = ndcg_batch(grades, offsets, k=4, ideal_grades=grades, ideal_offsets=offsets)
    >>> round(float(exp.ndcg[0]), 12)
    0.850793831051
    >>> lin = ndcg_batch(grades, offsets, k=4, ideal_grades=grades, ideal_offsets=offsets,
    ...                  gain="linear")
    >>> round(float(lin.ndcg[1]), 12), lin.zero_idcg_count
    (0.977781361631, 0)
    """
    k = check_k(k)
    check_gain(gain)
    check_discount(discount)
    if ideal_depth not in IDEAL_DEPTHS or unjudged not in UNJUDGED:
        raise ValueError(f"ideal_depth must be in {IDEAL_DEPTHS}, unjudged in {UNJUDGED}")
    signed = check_negative(negative) == "penalise"
    if signed and ideal_counts is not None:
        raise ValueError("negative='penalise' needs ideal_grades: counts hold no negative grade")
    ranked = np.asarray(ranked_grades, dtype=np.float64)
    offsets = check_offsets(offsets, len(ranked))
    ideal = _checked_ideal(len(offsets) - 1, ideal_grades, ideal_offsets, ideal_counts)
    depth = k if ideal_depth == "cut" else None
    # Blocks of queries keep the temporary arrays small enough to stay in the
    # processor's caches; the loop runs once per block, not once per query.
    parts = [
        _block_parts(ranked, offsets, ideal, lo, min(lo + BLOCK_QUERIES, len(offsets) - 1),
                     k=k, depth=depth, gain=gain, discount=discount, unjudged=unjudged,
                     signed=signed)
        for lo in range(0, max(len(offsets) - 1, 1), BLOCK_QUERIES)
    ]  # fmt: skip
    firsts = zip(*(part[:4] for part in parts), strict=True)
    dcg, idcg, judged, retrieved = (np.concatenate(column) for column in firsts)
    if not signed:
        all_irrelevant = idcg == 0.0
        ndcg = np.where(all_irrelevant, 0.0, dcg / np.where(all_irrelevant, 1.0, idcg))
        return BatchNdcgResult(k, dcg, idcg, ndcg, judged, retrieved)
    min_dcg = np.concatenate([part[4] for part in parts])
    span = idcg - min_dcg
    ndcg = np.where(span == 0.0, 0.0, (dcg - min_dcg) / np.where(span == 0.0, 1.0, span))
    return BatchNdcgResult(k, dcg, idcg, ndcg, judged, retrieved, min_dcg)


class _Ideal(NamedTuple):
    """The ideal input in one of its two forms: per-grade counts, or flat grades."""

    counts: Int64Array | None
    grades: FloatArray | None
    offsets: Int64Array | None

    def block(self, lo: int, hi: int) -> "_Ideal":
        if self.counts is not None:
            return _Ideal(self.counts[lo:hi], None, None)
        assert self.grades is not None and self.offsets is not None
        start, end = self.offsets[lo], self.offsets[hi]
        return _Ideal(None, self.grades[start:end], self.offsets[lo : hi + 1] - start)

    def idcg(self, depth: int | None, gain: Gain, discount: Discount) -> FloatArray:
        if self.counts is not None:
            return idcg_from_counts(self.counts, depth, gain, discount)
        assert self.grades is not None and self.offsets is not None
        return idcg_from_grades(self.grades, self.offsets, depth, gain, discount)

    def worst_dcg(self, depth: int | None, gain: Gain, discount: Discount) -> FloatArray:
        assert self.grades is not None and self.offsets is not None
        return worst_dcg_from_grades(self.grades, self.offsets, depth, gain, discount)


def _block_parts(
    ranked: FloatArray,
    offsets: Int64Array,
    ideal: _Ideal,
    lo: int,
    hi: int,
    *,
    k: int | None,
    depth: int | None,
    gain: Gain,
    discount: Discount,
    unjudged: Unjudged,
    signed: bool,
) -> tuple:
    """DCG, IDCG, judged and returned counts of queries ``lo .. hi - 1``, and their
    worst DCG when negative grades penalise (``signed``)."""
    start, end = offsets[lo], offsets[hi]
    ranked, offsets = ranked[start:end], offsets[lo : hi + 1] - start
    block = ideal.block(lo, hi)
    idcg = block.idcg(depth, gain, discount)
    worst = (block.worst_dcg(depth, gain, discount),) if signed else ()
    if unjudged == "remove":
        # Judged hits in the top k are counted on the running count condensing takes.
        lengths = np.diff(offsets)
        retrieved = lengths if k is None else np.minimum(lengths, k)
        is_judged = ~np.isnan(ranked)
        judged_before = np.concatenate(([0], np.cumsum(is_judged)))
        judged = judged_before[offsets[:-1] + retrieved] - judged_before[offsets[:-1]]
        dcg, _, _ = ranked_dcg_and_judged(
            ranked[is_judged], judged_before[offsets], k, gain, discount, signed=signed
        )
        return dcg, idcg, judged.astype(np.int64), retrieved.astype(np.int64), *worst
    dcg, judged, retrieved = ranked_dcg_and_judged(
        ranked, offsets, k, gain, discount, signed=signed
    )
    return dcg, idcg, judged, retrieved, *worst


def _checked_ideal(
    n_queries: int,
    ideal_grades: ArrayLike | None,
    ideal_offsets: ArrayLike | None,
    ideal_counts: ArrayLike | None,
) -> _Ideal:
    if (ideal_counts is None) == (ideal_grades is None):
        raise ValueError("give exactly one of ideal_grades (with ideal_offsets) or ideal_counts")
    if ideal_counts is not None:
        counts = np.asarray(ideal_counts, dtype=np.int64)
        if counts.ndim != 2 or len(counts) != n_queries or np.any(counts < 0):
            raise ValueError("ideal_counts must be a non-negative (n_queries, n_levels) array")
        return _Ideal(counts, None, None)
    if ideal_offsets is None:
        raise ValueError("ideal_grades needs ideal_offsets")
    grades = np.asarray(ideal_grades, dtype=np.float64)
    offsets = check_offsets(ideal_offsets, len(grades), "ideal_offsets")
    if len(offsets) - 1 != n_queries:
        raise ValueError("ideal_offsets and offsets must describe the same number of queries")
    return _Ideal(None, grades, offsets)
