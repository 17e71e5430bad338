"""Inter-rater agreement: Krippendorff's alpha over flat arrays of grades.

A *unit* is one judged (query, document) pair; its *values* are the current
grades its raters gave. Input is the layout of :mod:`metrics.core.consensus`:
every unit's grades flat, unit after unit, with ``offsets``. A unit with a
single grade has nothing to agree with and is left out (it is not
"pairable"), as are units without grades; missing grades need no special
marker.

``alpha = 1 - D_o / D_e``: 1 is perfect agreement, 0 is agreement no better
than chance, and negative values are systematic disagreement. When the
pairable grades do not vary at all (or fewer than two exist) ``D_e`` is 0 and
alpha is undefined: NaN is returned rather than a made-up number.

Metrics (how far apart two grades are)
--------------------------------------
nominal
    0 for equal grades, 1 otherwise.
ordinal (the app's default, for graded relevance)
    Depends only on the order of grades and how many grades lie between two
    values: ``(sum_{g=c}^{k} n_g - (n_c + n_k) / 2) ** 2`` with ``n_g`` the
    number of pairable grades equal to ``g``.
interval
    ``(c - k) ** 2``.
ratio
    ``((c - k) / (c + k)) ** 2``.
"""

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from metrics.core.segments import FloatArray, Int64Array, check_offsets, segment_ids

Metric = Literal["nominal", "ordinal", "interval", "ratio"]
METRICS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")


def krippendorff_alpha(values: ArrayLike, offsets: ArrayLike, metric: Metric = "ordinal") -> float:
    """Krippendorff's alpha of grades given to units (pairs) by several raters.

    Parameters
    ----------
    values : array-like of float, shape (n_values,)
        Every unit's grades, unit after unit (NaN values are ignored).
    offsets : array-like of int, shape (n_units + 1,)
        Unit ``u`` owns ``values[offsets[u]:offsets[u + 1]]``.
    metric : {"nominal", "ordinal", "interval", "ratio"}, default="ordinal"

    Returns
    -------
    alpha : float
        NaN when undefined (no pairable unit, or no variation at all).

    References
    ----------
    .. [1] Krippendorff, "Computing Krippendorff's Alpha-Reliability",
       University of Pennsylvania, 2011, https://repository.upenn.edu/asc_papers/43
       (section C: 4 observers, 12 units, missing values).
    .. [2] Hayes & Krippendorff, "Answering the call for a standard reliability
       measure for coding data", Communication Methods and Measures 1(1), 2007.

    Examples
    --------
    The reliability data of [1], section C, one unit per column read top to
    bottom (observers A, B, C, D; missing values left out):

    >>> values = [1, 1, 1,  2, 2, 3, 2,  3, 3, 3, 3,  3, 3, 3, 3,  2, 2, 2, 2,  1, 2, 3, 4,
    ...           4, 4, 4, 4,  1, 1, 2, 1,  2, 2, 2, 2,  5, 5, 5,  1, 1,  3]
    >>> offsets = [0, 3, 7, 11, 15, 19, 23, 27, 31, 35, 38, 40, 41]
    >>> [round(krippendorff_alpha(values, offsets, m), 3) for m in METRICS]
    [0.743, 0.815, 0.849, 0.797]
    """
    units = len(np.asarray(offsets)) - 1
    alpha = krippendorff_alpha_by_group(values, offsets, np.zeros(units), metric, n_groups=1)
    return float(alpha[0])


def krippendorff_alpha_by_group(
    values: ArrayLike,
    offsets: ArrayLike,
    groups: ArrayLike,
    metric: Metric = "ordinal",
    *,
    n_groups: int | None = None,
) -> FloatArray:
    """Krippendorff's alpha within each group of units (for example per query).

    Parameters
    ----------
    values, offsets : array-like
        As in :func:`krippendorff_alpha`.
    groups : array-like of int, shape (n_units,)
        Group index (0-based) of each unit.
    metric : {"nominal", "ordinal", "interval", "ratio"}, default="ordinal"
    n_groups : int, optional
        Number of groups; by default one more than the largest index.

    Returns
    -------
    alpha : ndarray of float, shape (n_groups,)
        NaN for a group where alpha is undefined.

    Examples
    --------
    Two queries: raters agree on the first, disagree on the second.

    >>> values = [3, 3, 0, 0, 1, 1,  3, 0, 0, 2, 2, 1]
    >>> krippendorff_alpha_by_group(values, [0, 2, 4, 6, 8, 10, 12], [0, 0, 0, 1, 1, 1]).round(3)
    array([ 1.   , -0.591])
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, not {metric!r}")
    grades = np.asarray(values, dtype=np.float64)
    bounds = check_offsets(offsets, len(grades))
    owner = np.asarray(groups, dtype=np.int64)
    if owner.shape != (len(bounds) - 1,) or np.any(owner < 0):
        raise ValueError("groups must give a non-negative group index for every unit")
    if n_groups is None:
        n_groups = int(owner.max()) + 1 if len(owner) else 0
    levels, counts = unit_value_counts(grades, bounds)
    coincidences = coincidence_matrices(counts, owner, n_groups)
    return alpha_from_coincidences(coincidences, levels, metric)


def unit_value_counts(values: FloatArray, offsets: Int64Array) -> tuple[FloatArray, FloatArray]:
    """The distinct grades and, per unit, how many times each occurs.

    Examples
    --------
    >>> levels, counts = unit_value_counts(np.array([2.0, 0, 2, np.nan]), np.array([0, 3, 4]))
    >>> levels.tolist(), counts.tolist()
    ([0.0, 2.0], [[1.0, 2.0], [0.0, 0.0]])
    """
    present = ~np.isnan(values)
    units = segment_ids(offsets)[present]
    levels, level_of = np.unique(values[present], return_inverse=True)
    # One bincount of (unit, level) cells: np.add.at takes ten times as long.
    cells = (len(offsets) - 1) * len(levels)
    flat = np.bincount(units * len(levels) + level_of, minlength=cells)
    return levels, flat.reshape(len(offsets) - 1, len(levels)).astype(np.float64)


def coincidence_matrices(counts: FloatArray, groups: Int64Array, n_groups: int) -> FloatArray:
    """Coincidence matrix of each group: ``o[g, c, k]`` pairs of values c-k within units.

    Each pairable unit with ``m`` values contributes its ``m (m - 1)`` ordered
    pairs of values from different raters, weighted by ``1 / (m - 1)``, so
    that it adds ``m`` to the matrix total.

    Examples
    --------
    >>> coincidence_matrices(np.array([[1.0, 2.0]]), np.array([0]), 1).tolist()
    [[[0.0, 1.0], [1.0, 1.0]]]
    """
    pairable = counts.sum(axis=1) >= 2
    kept, owner = counts[pairable], groups[pairable]
    weights = 1.0 / (kept.sum(axis=1) - 1)
    pairs = kept[:, :, None] * kept[:, None, :]
    levels = counts.shape[1]
    pairs[:, np.arange(levels), np.arange(levels)] -= kept
    # Each cell summed over the groups by a bincount (np.add.at is ten times slower).
    weighted = (pairs * weights[:, None, None]).reshape(len(kept), levels * levels)
    result = np.empty((n_groups, levels * levels))
    for cell in range(levels * levels):
        result[:, cell] = np.bincount(owner, weights=weighted[:, cell], minlength=n_groups)
    return result.reshape(n_groups, levels, levels)


def alpha_from_coincidences(
    coincidences: FloatArray, levels: FloatArray, metric: Metric
) -> FloatArray:
    """Alpha of each coincidence matrix: ``1 - (n - 1) * sum(o * d) / sum(n_c * n_k * d)``.

    Examples
    --------
    >>> o = np.array([[[2.0, 0.0], [0.0, 2.0]]])
    >>> alpha_from_coincidences(o, np.array([0.0, 1.0]), "nominal").tolist()
    [1.0]
    """
    marginals = coincidences.sum(axis=2)
    total = marginals.sum(axis=1)
    distance = _distances(marginals, levels, metric)
    observed = np.sum(coincidences * distance, axis=(1, 2))
    expected = np.einsum("gc,gk,gck->g", marginals, marginals, distance)
    defined = (expected > 0) & (total >= 2)
    safe = np.where(defined, expected, 1.0)
    return np.where(defined, 1.0 - (total - 1) * observed / safe, np.nan)


def _distances(marginals: FloatArray, levels: FloatArray, metric: Metric) -> FloatArray:
    """Squared distance ``d[g, c, k]`` between levels c and k for each group."""
    n_groups, n_levels = marginals.shape
    if metric == "ordinal":
        running = np.concatenate((np.zeros((n_groups, 1)), np.cumsum(marginals, axis=1)), axis=1)
        index = np.arange(n_levels)
        low, high = np.minimum.outer(index, index), np.maximum.outer(index, index)
        between = running[:, high + 1] - running[:, low]
        ends = (marginals[:, :, None] + marginals[:, None, :]) / 2
        return (between - ends) ** 2
    c, k = levels[:, None], levels[None, :]
    if metric == "nominal":
        single = (c != k).astype(np.float64)
    elif metric == "interval":
        single = (c - k) ** 2
    else:
        sums = np.where(c + k == 0, 1.0, c + k)
        single = ((c - k) / sums) ** 2
    return np.broadcast_to(single, (n_groups, n_levels, n_levels))
