"""Precision, average precision, reciprocal rank and ERR of every query in one pass.

Same definitions as :mod:`metrics.core.measures`, on the flat layout of
:mod:`metrics.core.segments`: ``ranked_grades`` holds every query's hits in
rank order (NaN for unjudged) and ``offsets`` marks where each query starts.
"""

import numpy as np
from numpy.typing import ArrayLike

from metrics.core.measures import stopping_probabilities
from metrics.core.ndcg import check_k
from metrics.core.segments import (
    FloatArray,
    check_offsets,
    positions,
    segment_maxima,
    segment_sums,
    within_segment_cumprod,
    within_segment_cumsum,
)


def precision_batch(
    ranked_grades: ArrayLike, offsets: ArrayLike, *, k: int, threshold: float = 1.0
) -> FloatArray:
    """Precision at ``k`` of every query (divisor ``k``, as in trec_eval).

    Parameters
    ----------
    ranked_grades : array-like of float, shape (n_hits,)
    offsets : array-like of int, shape (n_queries + 1,)
    k : int
    threshold : float, default=1.0
        Lowest grade that counts as relevant.

    Returns
    -------
    precision : ndarray of float64, shape (n_queries,)

    References
    ----------
    .. [1] trec_eval, ``m_P.c``.

    Examples
    --------
    >>> precision_batch([2, 0, 3, 2, 0, 1], [0, 4, 6], k=4).tolist()
    [0.75, 0.25]
    """
    k = check_k(k)
    if k is None:
        raise ValueError("precision_batch needs a cut-off k")
    ranked = np.asarray(ranked_grades, dtype=np.float64)
    offsets = check_offsets(offsets, len(ranked))
    hits = (ranked >= threshold) & (positions(offsets) < k)
    return segment_sums(hits.astype(np.float64), offsets) / k


def average_precision_batch(
    ranked_grades: ArrayLike,
    offsets: ArrayLike,
    n_relevant: ArrayLike,
    *,
    k: int | None = None,
    threshold: float = 1.0,
) -> FloatArray:
    """Average precision of every query.

    Parameters
    ----------
    ranked_grades : array-like of float, shape (n_hits,)
    offsets : array-like of int, shape (n_queries + 1,)
    n_relevant : array-like of int, shape (n_queries,)
        Judged documents at or above ``threshold`` per query (the divisor).
    k : int or None, default=None
        Only hits in the top ``k`` contribute.
    threshold : float, default=1.0

    Returns
    -------
    average_precision : ndarray of float64, shape (n_queries,)
        0 for queries with no relevant judged document.

    References
    ----------
    .. [1] trec_eval, ``m_map.c``.

    Examples
    --------
    >>> average_precision_batch([1, 0, 2, 0, 0], [0, 4, 5], [3, 0]).round(6).tolist()
    [0.555556, 0.0]
    """
    k = check_k(k)
    ranked = np.asarray(ranked_grades, dtype=np.float64)
    offsets = check_offsets(offsets, len(ranked))
    n_relevant = np.asarray(n_relevant, dtype=np.float64)
    rank = positions(offsets) + 1
    relevant = ranked >= threshold
    if k is not None:
        relevant &= rank <= k
    precision_at_hit = np.where(relevant, within_segment_cumsum(relevant, offsets) / rank, 0.0)
    totals = segment_sums(precision_at_hit, offsets)
    no_relevant = n_relevant == 0
    return np.where(no_relevant, 0.0, totals / np.where(no_relevant, 1.0, n_relevant))


def reciprocal_rank_batch(
    ranked_grades: ArrayLike, offsets: ArrayLike, *, k: int | None = None, threshold: float = 1.0
) -> FloatArray:
    """Reciprocal rank of the first relevant hit of every query (0 if none).

    Parameters
    ----------
    ranked_grades : array-like of float, shape (n_hits,)
    offsets : array-like of int, shape (n_queries + 1,)
    k : int or None, default=None
    threshold : float, default=1.0

    Returns
    -------
    reciprocal_rank : ndarray of float64, shape (n_queries,)

    References
    ----------
    .. [1] trec_eval, ``m_recip_rank.c``.

    Examples
    --------
    >>> reciprocal_rank_batch([0, np.nan, 2, 3, 0], [0, 4, 5]).round(6).tolist()
    [0.333333, 0.0]
    """
    k = check_k(k)
    ranked = np.asarray(ranked_grades, dtype=np.float64)
    offsets = check_offsets(offsets, len(ranked))
    rank = positions(offsets) + 1
    relevant = ranked >= threshold
    if k is not None:
        relevant &= rank <= k
    return segment_maxima(np.where(relevant, 1.0 / rank, 0.0), offsets)


def expected_reciprocal_rank_batch(
    ranked_grades: ArrayLike, offsets: ArrayLike, *, k: int | None, max_grade: float
) -> FloatArray:
    """Expected reciprocal rank (ERR) at ``k`` of every query.

    The chance of reaching a rank is the product of ``1 - R`` over the ranks above
    it, a running product within each query.

    Parameters
    ----------
    ranked_grades : array-like of float, shape (n_hits,)
        NaN (unjudged) and negative grades stop nobody.
    offsets : array-like of int, shape (n_queries + 1,)
    k : int or None
        Cut-off; None uses whole lists.
    max_grade : float
        Highest grade of the scale; see :func:`metrics.core.measures.expected_reciprocal_rank`.

    Returns
    -------
    err : ndarray of float64, shape (n_queries,)

    References
    ----------
    .. [1] Chapelle, Metzler, Zhang & Grinspan, "Expected reciprocal rank for
       graded relevance", CIKM 2009.

    Examples
    --------
    Worked example A's grades, and a query with only an unjudged hit:

    >>> expected_reciprocal_rank_batch([2, 3, 1, 2, np.nan], [0, 4, 5], k=4,
    ...                                max_grade=3).round(12).tolist()
    [0.65810139974, 0.0]
    """
    k = check_k(k)
    ranked = np.asarray(ranked_grades, dtype=np.float64)
    offsets = check_offsets(offsets, len(ranked))
    rank = positions(offsets) + 1
    stop = stopping_probabilities(ranked, max_grade)
    if k is not None:
        stop = np.where(rank <= k, stop, 0.0)
    # The user reaches a rank only if they did not stop at any rank above it.
    carried_on = within_segment_cumprod(1.0 - stop, offsets)
    reach = np.where(rank > 1, np.r_[1.0, carried_on[:-1]], 1.0)
    return segment_sums(reach * stop / rank, offsets)
