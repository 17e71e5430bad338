"""Consensus grade of a (query, document) pair from its raters' current grades.

Policies
--------
mean (default)
    The arithmetic mean: fractional consensus grades are normal.
median
    The middle grade; the mean of the two middle grades for an even count.
majority
    The most frequent grade; a tie goes to the lowest of the tied grades, so a
    split panel never inflates relevance.
quepid
    Quepid's rule: with fewer than 3 grades, the mean; otherwise the top 3
    grades if they are equal, else the minimum of the top 3. Both branches give
    the third-highest grade, which is how it is computed here.

Every function takes the grades of all pairs flat, pair after pair, with
offsets as in :mod:`metrics.core.segments`; a pair with no grade has no
consensus (NaN).
"""

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from metrics.core.segments import FloatArray, Int64Array, check_offsets, segment_ids

Policy = Literal["mean", "median", "majority", "quepid"]
POLICIES: tuple[str, ...] = ("mean", "median", "majority", "quepid")


def consensus(grades: ArrayLike, offsets: ArrayLike, policy: Policy = "mean") -> FloatArray:
    """Consensus grade of each pair under ``policy``.

    Parameters
    ----------
    grades : array-like of float, shape (n_grades,)
        Every pair's current grades, pair after pair, in any order within a pair.
    offsets : array-like of int, shape (n_pairs + 1,)
        Pair ``p`` owns ``grades[offsets[p]:offsets[p + 1]]``.
    policy : {"mean", "median", "majority", "quepid"}, default="mean"

    Returns
    -------
    consensus : ndarray of float, shape (n_pairs,)
        NaN for a pair without grades.

    Examples
    --------
    Three pairs: a split panel, a unanimous one and one with four raters:

    >>> grades = [1, 3,  2, 2, 2,  0, 1, 3, 3]
    >>> offsets = [0, 2, 5, 9]
    >>> consensus(grades, offsets, "mean").tolist()
    [2.0, 2.0, 1.75]
    >>> consensus(grades, offsets, "majority").tolist()
    [1.0, 2.0, 3.0]
    >>> consensus(grades, offsets, "quepid").tolist()
    [2.0, 2.0, 1.0]
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, not {policy!r}")
    values = np.asarray(grades, dtype=np.float64)
    bounds = check_offsets(offsets, len(values))
    order = np.lexsort((values, segment_ids(bounds)))
    ordered = values[order]
    counts = np.diff(bounds)
    return _POLICY_FUNCTIONS[policy](ordered, bounds, counts)


def _mean(ordered: FloatArray, bounds: Int64Array, counts: Int64Array) -> FloatArray:
    sums = np.bincount(segment_ids(bounds), weights=ordered, minlength=len(counts))
    return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def _median(ordered: FloatArray, bounds: Int64Array, counts: Int64Array) -> FloatArray:
    low = _pick(ordered, bounds[:-1] + (counts - 1) // 2, counts)
    high = _pick(ordered, bounds[:-1] + counts // 2, counts)
    return (low + high) / 2


def _majority(ordered: FloatArray, bounds: Int64Array, counts: Int64Array) -> FloatArray:
    result = np.full(len(counts), np.nan)
    if len(ordered) == 0:
        return result
    pairs = segment_ids(bounds)
    levels, level_of = np.unique(ordered, return_inverse=True)
    tally = np.zeros((len(counts), len(levels)), dtype=np.int64)
    np.add.at(tally, (pairs, level_of), 1)
    # argmax returns the first maximum, which is the lowest of tied grades.
    winners = levels[np.argmax(tally, axis=1)]
    return np.where(counts > 0, winners, result)


def _quepid(ordered: FloatArray, bounds: Int64Array, counts: Int64Array) -> FloatArray:
    third_highest = _pick(ordered, bounds[1:] - 3, counts - 2)
    return np.where(counts < 3, _mean(ordered, bounds, counts), third_highest)


def _pick(ordered: FloatArray, positions: Int64Array, valid: Int64Array) -> FloatArray:
    """``ordered[positions]`` where ``valid > 0``, NaN elsewhere (positions may be junk)."""
    ok = valid > 0
    safe = np.where(ok, positions, 0)
    picked = ordered[safe] if len(ordered) else np.zeros(len(positions))
    return np.where(ok, picked, np.nan)


_POLICY_FUNCTIONS = {"mean": _mean, "median": _median, "majority": _majority, "quepid": _quepid}
