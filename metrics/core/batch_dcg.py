"""DCG and ideal DCG of many queries at once, on flat arrays with offsets.

These are the building blocks of :func:`metrics.core.batch.ndcg_batch`; see
there for the definitions. The ideal DCG of integer grades needs no
per-query sort: with per-grade counts and the prefix sums ``P`` of the
discount table, ``IDCG = sum_g gain(g) * (P[end_g] - P[start_g])``.
"""

import numpy as np
from numpy.typing import NDArray

from metrics.core.gains import (
    Discount,
    Gain,
    discount_prefix_sums,
    discount_values,
    gain_values,
    signed_gain_values,
)
from metrics.core.segments import (
    FloatArray,
    Int64Array,
    padded_rows,
    positions,
    segment_ids,
    segment_sums,
)

# Integer grades up to this value take the per-grade-count path for the ideal.
MAX_COUNTED_GRADE = 64


def judged_counts(
    ranked: FloatArray, offsets: Int64Array, k: int | None
) -> tuple[Int64Array, Int64Array]:
    """Return judged and returned hit counts within each query's top ``k``.

    Examples
    --------
    >>> judged, retrieved = judged_counts(np.array([1.0, np.nan, 0.0]), np.array([0, 3]), 2)
    >>> judged.tolist(), retrieved.tolist()
    ([1], [2])
    """
    lengths = np.diff(offsets)
    retrieved = lengths if k is None else np.minimum(lengths, k)
    is_judged = ~np.isnan(ranked)
    if k is not None:
        is_judged &= positions(offsets) < k
    judged = segment_sums(is_judged.astype(np.int64), offsets)
    return judged.astype(np.int64), retrieved.astype(np.int64)


def ranked_dcg(
    ranked: FloatArray, offsets: Int64Array, k: int | None, gain: Gain, discount: Discount
) -> FloatArray:
    """DCG at ``k`` of each query's ranked grades (NaN and negative grades give 0).

    Examples
    --------
    >>> ranked_dcg(np.array([2.0, 0, 3, 2]), np.array([0, 4]), None, "linear", "rank").tolist()
    [3.5]
    """
    return ranked_dcg_and_judged(ranked, offsets, k, gain, discount)[0]


def ranked_dcg_and_judged(
    ranked: FloatArray,
    offsets: Int64Array,
    k: int | None,
    gain: Gain,
    discount: Discount,
    *,
    signed: bool = False,
) -> tuple[FloatArray, Int64Array, Int64Array]:
    """DCG at ``k`` and the judged and returned hit counts in each query's top ``k``.

    ``signed``: negative grades keep their sign in the gain (``negative="penalise"``).

    Examples
    --------
    >>> dcg, judged, retrieved = ranked_dcg_and_judged(
    ...     np.array([2.0, np.nan, 3, 2]), np.array([0, 4]), 2, "linear", "rank")
    >>> dcg.tolist(), judged.tolist(), retrieved.tolist()
    ([2.0], [1], [2])
    """
    lengths = np.diff(offsets)
    longest = int(lengths.max()) if len(lengths) else 0
    width = longest if k is None else min(k, longest)
    retrieved = np.minimum(lengths, width)
    # A dense (queries x width) matrix turns the sums into a few passes over its
    # columns; it is used when padding short lists wastes little memory.
    gains_of = signed_gain_values if signed else gain_values
    if len(lengths) * width <= 2 * len(ranked) + 1024:
        matrix, _ = padded_rows(ranked, offsets, width)
        dcg = row_weighted_sums(gains_of(matrix, gain), discount_values(width, discount))
        return dcg, np.count_nonzero(~np.isnan(matrix), axis=1).astype(np.int64), retrieved
    # Each query's top ``width`` summed in rank order (bincount adds its weights one
    # after the other), as the dense path sums them: the same value either way.
    rank = positions(offsets)
    top = rank < width
    weighted = gains_of(ranked[top], gain) * discount_values(width, discount)[rank[top]]
    dcg = np.bincount(segment_ids(offsets)[top], weights=weighted, minlength=len(lengths))
    return dcg, judged_counts(ranked, offsets, k)[0], retrieved


def idcg_from_counts(
    counts: Int64Array, depth: int | None, gain: Gain, discount: Discount
) -> FloatArray:
    """Ideal DCG of each query from its per-grade counts, without sorting.

    Parameters
    ----------
    counts : ndarray of int, shape (n_queries, n_levels)
        ``counts[q, g]``: judged documents of grade ``g`` for query ``q``.
    depth : int or None
        Ideal positions summed; None sums them all.
    gain, discount : str
        As in :func:`metrics.core.batch.ndcg_batch`.

    Returns
    -------
    idcg : ndarray of float64, shape (n_queries,)

    References
    ----------
    .. [1] trec_eval, ``m_ndcg_cut.c`` (ideal DCG walked level by level).

    Examples
    --------
    Worked example A's ideal ``[3, 2, 2, 1]`` as counts of grades 0 to 3:

    >>> idcg_from_counts(np.array([[0, 1, 2, 1]]), 4, "exponential", "log2").round(9).tolist()
    [10.823465819]
    """
    n_queries, n_levels = counts.shape
    if n_levels < 2:
        return np.zeros(n_queries)
    # Grade 0 has gain 0, so only grades n_levels-1 down to 1 are placed.
    best_first = counts[:, :0:-1]
    ends = np.cumsum(best_first, axis=1)
    starts = ends - best_first
    if depth is not None:
        ends, starts = np.minimum(ends, depth), np.minimum(starts, depth)
    prefix = discount_prefix_sums(int(ends[:, -1].max()) if n_queries else 0, discount)
    level_gains = gain_values(np.arange(n_levels - 1, 0, -1), gain)
    return row_weighted_sums(prefix[ends] - prefix[starts], level_gains)


def row_weighted_sums(matrix: FloatArray, weights: FloatArray) -> FloatArray:
    """Each row's sum of its values times ``weights``, added column by column.

    A matrix-vector product would be BLAS's, which sums rows in blocks whose
    rounding depends on how many rows the matrix has and where a row falls: a
    query's value would change in its last bit with the queries computed beside it
    (a refresh of one query against the whole list, a list split into chunks).
    Column by column, each row's sum is the same left-to-right sum whatever the
    other rows; columns of zeros past a short row's end add exactly nothing.

    Examples
    --------
    >>> row_weighted_sums(np.array([[1.0, 2.0], [3.0, 0.0]]), np.array([1.0, 0.5])).tolist()
    [2.0, 3.0]
    """
    columns = np.ascontiguousarray(matrix.T)
    sums = np.zeros(matrix.shape[0])
    for column, weight in zip(columns, weights, strict=True):
        sums += column * weight
    return sums


def idcg_from_grades(
    grades: FloatArray, offsets: Int64Array, depth: int | None, gain: Gain, discount: Discount
) -> FloatArray:
    """Ideal DCG of each query from its judged grades, flat with offsets.

    Small non-negative integer grades are turned into per-grade counts
    (:func:`idcg_from_counts`); other grades are sorted within each query.

    Examples
    --------
    >>> grades, offsets = np.array([0.5, 2.5, 1.0, np.nan, -1.0]), np.array([0, 3, 5])
    >>> idcg_from_grades(grades, offsets, None, "linear", "rank").tolist()
    [3.1666666666666665, 0.0]
    """
    counts = grade_counts(grades, offsets)
    if counts is not None:
        return idcg_from_counts(counts, depth, gain, discount)
    # Some grade is fractional (a mean consensus): the queries whose grades are all
    # small integers still take the counts path, as each would alone, since the two
    # paths round differently and a query's value must not depend on the queries
    # computed beside it (a refresh of one query, a list split into chunks).
    usable = grades >= 0  # NaN compares False, so unjudged grades drop out too.
    countable = ~usable | ((grades == np.floor(grades)) & (grades <= MAX_COUNTED_GRADE))
    counted = segment_sums((~countable).astype(np.int64), offsets) == 0
    if not counted.any():
        return _idcg_sorted(grades, offsets, usable, depth, gain, discount)
    idcg = np.empty(len(offsets) - 1)
    values, part_offsets = _segments_of(grades, offsets, counted)
    idcg[counted] = idcg_from_counts(grade_counts(values, part_offsets), depth, gain, discount)
    values, part_offsets = _segments_of(grades, offsets, ~counted)
    idcg[~counted] = _idcg_sorted(values, part_offsets, values >= 0, depth, gain, discount)
    return idcg


def _segments_of(
    values: FloatArray, offsets: Int64Array, keep: NDArray[np.bool_]
) -> tuple[FloatArray, Int64Array]:
    """The segments flagged in ``keep``, flat, and their offsets."""
    lengths = np.diff(offsets)
    kept = lengths[keep]
    return values[np.repeat(keep, lengths)], np.concatenate(([0], np.cumsum(kept)))


def _idcg_sorted(grades, offsets, usable, depth, gain, discount) -> FloatArray:
    if np.all(usable) and _highest_first(grades, offsets):
        # Already the ideal lists (the packed grades come so): the sort is skipped.
        return ranked_dcg(grades, offsets, depth, gain, discount)
    return ranked_dcg(*_sorted_highest_first(grades, offsets, usable), depth, gain, discount)


def _sorted_highest_first(
    grades: FloatArray, offsets: Int64Array, usable: NDArray[np.bool_]
) -> tuple[FloatArray, Int64Array]:
    """The ``usable`` grades of each segment, highest first, and their offsets.

    Examples
    --------
    >>> grades = np.array([0.5, 2.5, np.nan, 1.0, 3.0])
    >>> values, offsets = _sorted_highest_first(grades, np.array([0, 3, 5]), grades >= 0)
    >>> values.tolist(), offsets.tolist()
    ([2.5, 0.5, 3.0, 1.0], [0, 2, 4])
    """
    kept_offsets = np.concatenate(([0], np.cumsum(usable)))[offsets]
    values = grades[usable]
    lengths = np.diff(kept_offsets)
    width = int(lengths.max(initial=0))
    if len(lengths) * width <= 4 * len(values) + 1024:
        # Segments of similar lengths (a result list's hits) are the rows of a matrix,
        # padded with -inf at their ends; sorting its short rows beats one long sort.
        matrix = np.full((len(lengths), width), -np.inf)
        present = np.arange(width) < lengths[:, None]
        matrix[present] = values
        matrix.sort(axis=1)
        return matrix[:, ::-1][present], kept_offsets
    order = np.lexsort((-values, segment_ids(kept_offsets)))
    return values[order], kept_offsets


def _highest_first(grades: FloatArray, offsets: Int64Array) -> bool:
    """Whether each segment of ``grades`` is in non-increasing order.

    Examples
    --------
    >>> _highest_first(np.array([2.5, 1.0, 0.5, 3.0]), np.array([0, 3, 4]))
    True
    >>> _highest_first(np.array([1.0, 2.5]), np.array([0, 2]))
    False
    """
    # A rise is allowed only where a new segment starts.
    starts = np.zeros(len(grades) + 1, dtype=bool)
    starts[offsets] = True
    return not np.any((np.diff(grades) > 0) & ~starts[1:-1])


def worst_dcg_from_grades(
    grades: FloatArray, offsets: Int64Array, depth: int | None, gain: Gain, discount: Discount
) -> FloatArray:
    """DCG of each query's worst ordering: its negative grades, most harmful first.

    The worst ordering of :mod:`metrics.core.ndcg` (``negative="penalise"``) is the
    ideal ordering of the harm done, so its DCG is minus the ideal DCG of the
    negative grades' magnitudes (``2**|g| - 1`` is the magnitude of the signed
    exponential gain); 0 for a query with no negative grade.

    Examples
    --------
    >>> grades, offsets = np.array([-2.0, 3, -1, np.nan, 1.0]), np.array([0, 3, 5])
    >>> worst_dcg_from_grades(grades, offsets, None, "linear", "log2").round(6).tolist()
    [-2.63093, 0.0]
    """
    harm = np.where(grades < 0, -grades, np.nan)
    return 0.0 - idcg_from_grades(harm, offsets, depth, gain, discount)


def grade_counts(grades: FloatArray, offsets: Int64Array) -> Int64Array | None:
    """Per-query counts of each integer grade, or None if the grades are not small integers.

    NaN and negative grades are not counted (they never enter an ideal list).
    Computing the counts once lets several cut-offs share them through
    ``ndcg_batch(..., ideal_counts=counts)``.

    Parameters
    ----------
    grades : ndarray of float64, shape (n_grades,)
        Judged grades of all queries, flat.
    offsets : ndarray of int64, shape (n_queries + 1,)

    Returns
    -------
    counts : ndarray of int64, shape (n_queries, max_grade + 1), or None
        None when a usable grade is fractional or above ``MAX_COUNTED_GRADE``.

    References
    ----------
    .. [1] trec_eval, ``form_res_rels.c`` (``rel_levels``, the same counts).

    Examples
    --------
    >>> grade_counts(np.array([3.0, 2, 2, 1, np.nan, 0]), np.array([0, 4, 6])).tolist()
    [[0, 1, 2, 1], [1, 0, 0, 0]]
    >>> grade_counts(np.array([0.5]), np.array([0, 1])) is None
    True
    """
    n_queries = len(offsets) - 1
    usable = grades >= 0  # NaN compares False, so unjudged grades drop out too.
    everyone = bool(np.all(usable))
    values = grades if everyone else grades[usable]
    top_grade = values.max() if len(values) else 0.0
    if top_grade > MAX_COUNTED_GRADE:
        return None
    levels = int(top_grade) + 1
    whole = values.astype(np.int64)
    if not np.array_equal(whole, values):
        return None
    owner = segment_ids(offsets) if everyone else segment_ids(offsets)[usable]
    flat = np.bincount(owner * levels + whole, minlength=n_queries * levels)
    return flat.reshape(n_queries, levels)
