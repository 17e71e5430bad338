"""Uncertainty of mean NDCG: bootstrap confidence intervals and a paired randomisation test.

A search team compares mean NDCG over a few dozen to a few thousand queries;
the per-query values are far from normal (many exact 0s and 1s), so these
functions resample instead of assuming a distribution. Every function takes a
``seed`` and draws from its own ``numpy.random.Generator``, so a page shows
the same interval and p-value on every reload.

Work is done in chunks of about a million draws, so ten thousand resamples
of ten thousand queries never need more than a few megabytes at once.
"""

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from metrics.core.segments import FloatArray

DEFAULT_RESAMPLES = 10_000
# Below this many values per chunk, the Python loop overhead dominates.
CHUNK_DRAWS = 1_000_000
# Drawing the positions is about two thirds of a bootstrap interval's cost, and they
# depend only on the number of values, of resamples and the seed: the last set drawn
# is kept while it fits in this many bytes (20 MB for the intervals' 1,000 resamples of
# 10,000 queries), so the next interval over as many queries, such as another metric of
# the same result list, reuses it. One set per process; larger sets are drawn each time.
KEPT_DRAW_BYTES = 32 * 2**20
_kept_draws: dict[tuple[int, int, int], NDArray] = {}
# Resampled values gathered at a time (512 kB of float64): averaging them while they are
# still in the cache costs half of gathering a whole chunk of draws and reading it back.
GATHER_VALUES = 2**16


@dataclass(frozen=True, slots=True)
class ConfidenceInterval:
    """A point estimate with the lower and upper ends of its interval."""

    estimate: float
    low: float
    high: float
    confidence: float
    resamples: int

    @property
    def width(self) -> float:
        return self.high - self.low


@dataclass(frozen=True, slots=True)
class RandomisationTest:
    """Observed mean difference ``b - a`` and its two-sided p-value."""

    mean_difference: float
    p_value: float
    resamples: int
    exact: bool


def bootstrap_mean_ci(
    values: ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> ConfidenceInterval:
    """Percentile bootstrap confidence interval of a mean.

    Parameters
    ----------
    values : array-like of float, shape (n,)
        One value per query, for example per-query NDCG.
    confidence : float, default=0.95
        Coverage of the interval, strictly between 0 and 1.
    n_resamples : int, default=10000
        Bootstrap samples of size ``n`` drawn with replacement.
    seed : int, default=0
        Seed of the ``numpy.random.Generator``: same data and seed, same interval.

    Returns
    -------
    interval : ConfidenceInterval
        ``estimate`` is the plain mean. With no values every field is NaN; with
        one value (or identical values) the interval collapses onto the mean.

    References
    ----------
    .. [1] Efron & Tibshirani, "An Introduction to the Bootstrap", Chapman &
       Hall, 1993, ch. 13 (percentile intervals).
    .. [2] Sakai, "Statistical Significance, Power, and Sample Sizes: A
       Systematic Review of SIGIR and TOIS, 2006-2015", SIGIR 2016.

    Examples
    --------
    >>> ci = bootstrap_mean_ci([0.2, 0.4, 0.6, 0.8, 1.0], n_resamples=2000, seed=1)
    >>> round(ci.estimate, 4), ci.low < 0.6 < ci.high, 0.2 <= ci.low and ci.high <= 1.0
    (0.6, True, True)
    >>> bootstrap_mean_ci([0.5, 0.5, 0.5]).width
    0.0
    """
    data = _as_values(values)
    return bootstrap_mean_cis(
        data[None, :], confidence=confidence, n_resamples=n_resamples, seed=seed
    )[0]


def bootstrap_mean_cis(
    values: ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> list[ConfidenceInterval]:
    """Percentile bootstrap intervals of the means of several series over the same queries.

    Each resample draws one set of queries and averages every series over it,
    so the draws are shared (and paid for once) and each series gets the same
    interval :func:`bootstrap_mean_ci` would give it with the same seed.

    Parameters
    ----------
    values : array-like of float, shape (m, n)
        Row ``i`` holds series ``i``'s value for each of the same ``n`` queries.
    confidence, n_resamples, seed
        As in :func:`bootstrap_mean_ci`.

    Returns
    -------
    intervals : list of ConfidenceInterval, one per row

    Examples
    --------
    >>> both = bootstrap_mean_cis([[0.2, 0.4, 0.9], [0.3, 0.5, 1.0]], n_resamples=500)
    >>> [round(ci.estimate, 4) for ci in both], round(both[1].low - both[0].low, 4)
    ([0.5, 0.6], 0.1)
    """
    data = np.asarray(values, dtype=np.float64)
    if data.ndim != 2 or np.any(np.isnan(data)):
        raise ValueError("values must be a 2-D array without NaN: one row per series")
    _check_confidence(confidence)
    if data.shape[1] == 0:
        return [ConfidenceInterval(np.nan, np.nan, np.nan, confidence, 0)] * len(data)
    means = bootstrap_means(data, n_resamples=n_resamples, seed=seed)
    tail = (1 - confidence) / 2
    return [
        _interval(float(np.mean(row)), row_means, tail, confidence, n_resamples)
        for row, row_means in zip(data, means, strict=True)
    ]


def _interval(estimate, means, tail, confidence, n_resamples) -> ConfidenceInterval:
    low, high = np.quantile(means, [tail, 1 - tail])
    # Rounding in the resampled sums can put an end a hair past the estimate
    # when every value is equal; the interval must still contain it.
    return ConfidenceInterval(
        estimate, min(float(low), estimate), max(float(high), estimate), confidence, n_resamples
    )


def bootstrap_means(values: FloatArray, *, n_resamples: int, seed: int) -> FloatArray:
    """Means of ``n_resamples`` bootstrap samples of each row of ``values`` (in chunks).

    Returns an array of shape ``(m, n_resamples)`` for ``values`` of shape ``(m, n)``.

    Examples
    --------
    >>> bootstrap_means(np.array([[1.0, 1.0]]), n_resamples=3, seed=0).tolist()
    [[1.0, 1.0, 1.0]]
    """
    _check_resamples(n_resamples)
    series, n = values.shape
    means = np.empty((series, n_resamples))
    # The resampled values are gathered a few samples at a time into one buffer that
    # stays in the processor's cache while it is averaged. Each sample's mean is the
    # same pairwise sum over its own contiguous row as ``row[picks].mean(axis=1)``,
    # so the means are those of the plain expression, bit for bit.
    rows = max(1, GATHER_VALUES // n)
    buffer = np.empty((rows, n))
    for start, picks in resampled_positions(n, n_resamples=n_resamples, seed=seed):
        for first in range(0, len(picks), rows):
            positions = picks[first : first + rows].astype(np.intp)
            gathered = buffer[: len(positions)]
            at = start + first
            for i, row in enumerate(values):
                # Every position is below n: "clip" only skips the bounds check.
                np.take(row, positions, out=gathered, mode="clip")
                means[i, at : at + len(positions)] = gathered.mean(axis=1)
    return means


def resampled_positions(n: int, *, n_resamples: int, seed: int) -> Iterator[tuple[int, NDArray]]:
    """The positions each bootstrap sample of ``n`` values draws, in chunks of about
    ``CHUNK_DRAWS``: (index of the chunk's first sample, positions of shape (samples, n)).

    The draws depend on ``n``, ``n_resamples`` and ``seed`` alone. The last set drawn is
    kept (see ``KEPT_DRAW_BYTES``) and given again for the same three: the same
    positions, without the draws.

    Examples
    --------
    >>> [(start, picks.tolist()) for start, picks in resampled_positions(2, n_resamples=2, seed=0)]
    [(0, [[1, 1], [1, 0]])]
    """
    key = (n, n_resamples, seed)
    rows = max(1, CHUNK_DRAWS // n)
    kept = _kept_draws.get(key)
    if kept is not None:
        for start in range(0, n_resamples, rows):
            yield start, kept[start : start + rows]
        return
    # Positions below 2**16 fit in two bytes (indexing by them gives the same values).
    kind = np.uint16 if n <= 2**16 else np.uint32
    keep = n * n_resamples * np.dtype(kind).itemsize <= KEPT_DRAW_BYTES
    drawn = np.empty((n_resamples, n), dtype=kind) if keep else None
    rng = np.random.default_rng(seed)
    for start in range(0, n_resamples, rows):
        stop = min(start + rows, n_resamples)
        picks = rng.integers(0, n, size=(stop - start, n))
        if drawn is not None:
            drawn[start:stop] = picks
        yield start, picks
    if drawn is not None:
        _kept_draws.clear()
        _kept_draws[key] = drawn


def paired_bootstrap_ci(
    a: ArrayLike,
    b: ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> ConfidenceInterval:
    """Bootstrap confidence interval of the mean paired difference ``b - a``.

    Queries are resampled as pairs, so that the interval reflects how the
    difference varies over queries, not how each system's scores vary.

    Parameters
    ----------
    a, b : array-like of float, shape (n,)
        Scores of the same queries, in the same order, under systems A and B.
    confidence, n_resamples, seed
        As in :func:`bootstrap_mean_ci`.

    Returns
    -------
    interval : ConfidenceInterval
        Of ``mean(b - a)``: an interval above 0 favours B.

    Examples
    --------
    >>> ci = paired_bootstrap_ci([0.1, 0.2, 0.3, 0.4], [0.3, 0.4, 0.4, 0.6], seed=3)
    >>> round(ci.estimate, 4), 0.1 <= ci.low <= ci.estimate <= ci.high <= 0.2
    (0.175, True)
    """
    return bootstrap_mean_ci(
        _differences(a, b), confidence=confidence, n_resamples=n_resamples, seed=seed
    )


def paired_randomisation_test(
    a: ArrayLike, b: ArrayLike, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> RandomisationTest:
    """Two-sided paired randomisation (sign-flip) test of ``mean(b - a) = 0``.

    Under the null hypothesis the labels A and B of each query are
    exchangeable, so each difference is as likely to have either sign. The
    p-value is the share of sign assignments whose mean difference is at
    least as far from 0 as the observed one. When ``2**m`` (``m`` non-zero
    differences) is at most ``n_resamples`` every assignment is enumerated and
    the p-value is exact; otherwise signs are drawn at random and the p-value
    is ``(1 + hits) / (1 + n_resamples)``, which is never 0.

    Parameters
    ----------
    a, b : array-like of float, shape (n,)
        Scores of the same queries, in the same order, under systems A and B.
    n_resamples : int, default=10000
        Random sign assignments drawn when enumeration is too large.
    seed : int, default=0

    Returns
    -------
    test : RandomisationTest
        ``p_value`` is 1.0 when there are no queries or every difference is 0.

    References
    ----------
    .. [1] Smucker, Allan & Carterette, "A comparison of statistical
       significance tests for information retrieval evaluation", CIKM 2007.
    .. [2] Phipson & Smyth, "Permutation p-values should never be zero",
       Stat. Appl. Genet. Mol. Biol. 9(1), 2010.

    Examples
    --------
    Four queries that all improve by 0.1: only two of the 16 sign patterns
    (all plus, all minus) are as extreme, so p = 2/16.

    >>> test = paired_randomisation_test([0.1, 0.2, 0.3, 0.4], [0.2, 0.3, 0.4, 0.5])
    >>> round(test.mean_difference, 4), test.p_value, test.exact
    (0.1, 0.125, True)
    """
    differences = _differences(a, b)
    observed = float(np.mean(differences)) if len(differences) else 0.0
    moving = differences[differences != 0]
    if len(moving) == 0:
        return RandomisationTest(observed, 1.0, 0, True)
    # Sums rather than means: every assignment has the same number of queries.
    threshold = abs(moving.sum()) - 1e-9 * np.abs(moving).sum()
    if 2 ** len(moving) <= n_resamples:
        sums = _all_sign_sums(moving)
        return RandomisationTest(observed, float(np.mean(np.abs(sums) >= threshold)), 0, True)
    hits = _random_sign_hits(moving, threshold, n_resamples, seed)
    return RandomisationTest(observed, (1 + hits) / (1 + n_resamples), n_resamples, False)


def _all_sign_sums(moving: FloatArray) -> FloatArray:
    patterns = np.arange(2 ** len(moving))[:, None] >> np.arange(len(moving)) & 1
    return (1 - 2 * patterns) @ moving


def _random_sign_hits(moving: FloatArray, threshold: float, n_resamples: int, seed: int) -> int:
    """How many random sign assignments give a sum at least ``threshold`` from 0."""
    _check_resamples(n_resamples)
    rng = np.random.default_rng(seed)
    total, n, hits = moving.sum(), len(moving), 0
    rows = max(1, CHUNK_DRAWS // n)
    for start in range(0, n_resamples, rows):
        count = min(rows, n_resamples - start)
        # One random bit per query: flipping the set bits subtracts them twice.
        bits = np.unpackbits(_random_bytes(rng, count, n)).reshape(count, -1)[:, :n]
        flipped = bits.astype(np.float64) @ moving
        hits += int(np.count_nonzero(np.abs(total - 2 * flipped) >= threshold))
    return hits


def _random_bytes(rng: np.random.Generator, rows: int, n: int) -> np.ndarray:
    """Enough random bytes for ``rows`` rows of ``n`` bits; 8 signs per draw."""
    return rng.integers(0, 256, size=rows * ((n + 7) // 8), dtype=np.uint8)


def _differences(a: ArrayLike, b: ArrayLike) -> FloatArray:
    first, second = _as_values(a), _as_values(b)
    if first.shape != second.shape:
        raise ValueError(f"a and b must pair up: {len(first)} and {len(second)} values")
    return second - first


def _as_values(values: ArrayLike) -> FloatArray:
    data = np.asarray(values, dtype=np.float64)
    if data.ndim != 1:
        raise ValueError("values must be one-dimensional: one value per query")
    if np.any(np.isnan(data)):
        raise ValueError("values must not contain NaN")
    return data


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence!r}")


def _check_resamples(n_resamples: int) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, not {n_resamples!r}")
