"""Averages over queries, with the zero-IDCG count and judged coverage kept in sight.

A system's score over a query set is the mean of its per-query NDCG values.
Queries whose IDCG is 0 have NDCG 0 (trec_eval's convention) and are counted,
so a mean dragged down by queries nobody judged relevant can be told apart
from a mean dragged down by bad rankings. Which queries a mean is over is a
parameter of its own (:func:`query_mean`): the judged ones, or all of them.
"""

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from metrics.core.ndcg import NdcgResult
from metrics.core.segments import FloatArray


@dataclass(frozen=True, slots=True)
class NdcgSummary:
    """Mean NDCG over ``queries`` and what stands behind it."""

    mean: float
    queries: int
    zero_idcg_queries: int
    judged: int
    retrieved: int

    @property
    def coverage(self) -> float:
        """Judged share of all evaluated hits; 0.0 when no hit was evaluated."""
        return self.judged / self.retrieved if self.retrieved else 0.0


def summarize(
    ndcg: ArrayLike, idcg: ArrayLike, judged: ArrayLike, retrieved: ArrayLike
) -> NdcgSummary:
    """Summarise per-query arrays (for example a :class:`BatchNdcgResult`'s).

    Parameters
    ----------
    ndcg, idcg : array-like of float, shape (n_queries,)
    judged, retrieved : array-like of int, shape (n_queries,)
        Judged and returned hits in each query's top ``k``.

    Returns
    -------
    summary : NdcgSummary
        ``mean`` is 0.0 for an empty query set.

    References
    ----------
    .. [1] trec_eval, ``meas_avg.c`` (mean over queries, IDCG = 0 gives 0).

    Examples
    --------
    >>> s = summarize([0.85, 0.0], [10.8, 0.0], [4, 3], [4, 4])
    >>> s.mean, s.zero_idcg_queries, s.coverage
    (0.425, 1, 0.875)
    """
    ndcg_values = np.asarray(ndcg, dtype=np.float64)
    all_irrelevant = np.asarray(idcg, dtype=np.float64) == 0.0
    return NdcgSummary(
        mean=float(np.mean(ndcg_values)) if len(ndcg_values) else 0.0,
        queries=len(ndcg_values),
        zero_idcg_queries=int(np.count_nonzero(all_irrelevant)),
        judged=int(np.sum(judged)),
        retrieved=int(np.sum(retrieved)),
    )


def mean_ndcg(results: Iterable[NdcgResult]) -> NdcgSummary:
    """Mean NDCG of per-query results, with the zero-IDCG count and coverage.

    Parameters
    ----------
    results : iterable of NdcgResult
        One result per query, from :func:`metrics.core.ndcg.ndcg`.

    Returns
    -------
    summary : NdcgSummary

    References
    ----------
    .. [1] trec_eval, ``meas_avg.c`` (mean over queries, IDCG = 0 gives 0).

    Examples
    --------
    Worked examples A and C, plus a query with no relevant judged document:

    >>> from metrics.core.ndcg import ndcg
    >>> results = [ndcg([2, 3, 1, 2], [3, 2, 2, 1], k=4),
    ...            ndcg([3, 2, 3, 0], [3, 3, 2, 0], k=4, gain="linear"),
    ...            ndcg([0, None], [0, 0], k=4)]
    >>> summary = mean_ndcg(results)
    >>> round(summary.mean, 12), summary.zero_idcg_queries, summary.coverage
    (0.609525064227, 1, 0.9)
    """
    listed = list(results)
    return summarize(
        [r.ndcg for r in listed],
        [r.idcg for r in listed],
        [r.judged for r in listed],
        [r.retrieved for r in listed],
    )


def mean_over(values: ArrayLike, n_queries: int) -> float:
    """Mean of per-query values over ``n_queries``, queries not listed counting 0.

    This is trec_eval's ``-c``: queries with judgements but no results still
    count in the divisor.

    Parameters
    ----------
    values : array-like of float
        Values of the queries that were evaluated.
    n_queries : int
        Number of queries the mean is over; at least ``len(values)``.

    Returns
    -------
    mean : float
        0.0 when ``n_queries`` is 0.

    References
    ----------
    .. [1] trec_eval, ``-c`` option (``meas_avg.c``).

    Examples
    --------
    >>> mean_over([0.5, 1.0], 4)
    0.375
    """
    if n_queries < len(np.atleast_1d(values)):
        raise ValueError("n_queries cannot be smaller than the number of values")
    return float(np.sum(values)) / n_queries if n_queries else 0.0


MeanOver = Literal["judged", "all"]
MEANS_OVER: tuple[MeanOver, ...] = ("judged", "all")


@dataclass(frozen=True, slots=True)
class QueryMean:
    """A mean over queries and the values it is over (``counted``, in query order)."""

    mean: float
    counted: FloatArray

    @property
    def queries(self) -> int:
        return len(self.counted)


def query_mean(
    values: ArrayLike,
    judgements: ArrayLike,
    *,
    over: MeanOver,
    unreturned: int = 0,
    weights: ArrayLike | None = None,
    unreturned_weight: float = 0.0,
) -> QueryMean:
    """Mean of per-query values over the queries that count.

    Parameters
    ----------
    values : array-like of float, shape (n_queries,)
        Each returned query's value (NDCG), in query order.
    judgements : array-like of int, shape (n_queries,)
        Each query's number of current grades, over all its judged documents.
    over : {"judged", "all"}
        ``"judged"``: only queries with at least one judgement count, as
        trec_eval averages over the queries of the run that are in the qrels.
        ``"all"``: every query counts, unjudged ones with their value (0), and
        so do ``unreturned`` more queries at 0, as ``trec_eval -c`` counts the
        queries of the qrels missing from the run.
    unreturned : int, default=0
        Judged queries the result list did not return (used by ``"all"``).
    weights : array-like of float, shape (n_queries,), optional
        Each query's weight (its traffic): the mean is then
        ``sum(weight * value) / sum(weight)`` over the queries that count, the
        unreturned ones adding ``unreturned_weight`` to the divisor. A mean whose
        weights are all 0 is 0.0.

    Returns
    -------
    mean : QueryMean
        ``mean`` (0.0 when no query counts, summed exactly with ``math.fsum``)
        and the ``counted`` values, zeros for the unreturned queries last.

    References
    ----------
    .. [1] trec_eval, ``meas_avg.c`` and its ``-c`` option.

    Examples
    --------
    Three returned queries, the last unjudged, and one judged query not returned:

    >>> query_mean([0.5, 1.0, 0.0], [2, 1, 0], over="judged").mean
    0.75
    >>> query_mean([0.5, 1.0, 0.0], [2, 1, 0], over="all", unreturned=1).mean
    0.375

    Weighted by traffic, the first query counting three times the second:

    >>> query_mean([0.5, 1.0, 0.0], [2, 1, 0], over="judged", weights=[300, 100, 5]).mean
    0.625
    """
    if over not in MEANS_OVER:
        raise ValueError(f"over must be one of {MEANS_OVER}, not {over!r}")
    values = np.asarray(values, dtype=np.float64)
    keep = np.asarray(judgements) > 0 if over == "judged" else np.ones(len(values), bool)
    counted = values[keep] if over == "judged" else np.concatenate((values, np.zeros(unreturned)))
    if weights is not None:
        weight = np.asarray(weights, dtype=np.float64)[keep]
        total = math.fsum(weight.tolist()) + (unreturned_weight if over == "all" else 0.0)
        mean = math.fsum((weight * values[keep]).tolist()) / total if total else 0.0
        return QueryMean(mean, counted)
    mean = math.fsum(counted.tolist()) / len(counted) if len(counted) else 0.0
    return QueryMean(mean, counted)
