"""Flat arrays with per-query offsets: the layout every batch function takes.

A result list of ``n`` queries is one flat array of values (the grades of all
queries' hits, query after query, each in rank order) plus an ``offsets``
array of ``n + 1`` non-decreasing integers, like a CSR ``indptr``: query ``q``
owns ``values[offsets[q]:offsets[q + 1]]``. A query with no hit has an empty
segment. Working on this layout keeps a whole result list to a handful of
numpy calls instead of a Python loop per query.
"""

import numpy as np
from numpy.typing import ArrayLike, NDArray

Int64Array = NDArray[np.int64]
FloatArray = NDArray[np.float64]


def check_offsets(offsets: ArrayLike, n_values: int, name: str = "offsets") -> Int64Array:
    """Return ``offsets`` as int64 after checking it describes ``n_values`` values.

    Raises ``ValueError`` unless ``offsets`` is 1-D, starts at 0, ends at
    ``n_values`` and never decreases.

    Examples
    --------
    >>> check_offsets([0, 2, 2, 5], 5).tolist()
    [0, 2, 2, 5]
    """
    array = np.asarray(offsets, dtype=np.int64)
    if array.ndim != 1 or len(array) == 0:
        raise ValueError(f"{name} must be a 1-D array of n_queries + 1 integers")
    if array[0] != 0 or array[-1] != n_values:
        raise ValueError(f"{name} must start at 0 and end at {n_values}, the number of values")
    if np.any(np.diff(array) < 0):
        raise ValueError(f"{name} must never decrease")
    return array


def offsets_from_lengths(lengths: ArrayLike) -> Int64Array:
    """Return the offsets of consecutive segments of the given lengths.

    Examples
    --------
    >>> offsets_from_lengths([2, 0, 3]).tolist()
    [0, 2, 2, 5]
    """
    return np.concatenate(([0], np.cumsum(np.asarray(lengths, dtype=np.int64))))


def segment_ids(offsets: Int64Array) -> Int64Array:
    """Return, for each value, the index of the query (segment) that owns it.

    Examples
    --------
    >>> segment_ids(np.array([0, 2, 2, 5])).tolist()
    [0, 0, 2, 2, 2]
    """
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


def positions(offsets: Int64Array) -> Int64Array:
    """Return, for each value, its 0-based position inside its segment (rank - 1).

    Examples
    --------
    >>> positions(np.array([0, 2, 2, 5])).tolist()
    [0, 1, 0, 1, 2]
    """
    lengths = np.diff(offsets)
    return np.arange(offsets[-1]) - np.repeat(offsets[:-1], lengths)


def segment_sums(values: FloatArray, offsets: Int64Array) -> FloatArray:
    """Sum each segment of ``values``; empty segments sum to 0.

    ``np.add.reduceat`` is given only the starts of non-empty segments: each
    sum then runs to the next non-empty start, which is exactly the end of its
    own segment, and the empty segments (which ``reduceat`` mishandles) are
    left at 0.

    Examples
    --------
    >>> segment_sums(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), np.array([0, 2, 2, 5])).tolist()
    [3.0, 0.0, 12.0]
    """
    sums = np.zeros(len(offsets) - 1, dtype=np.result_type(values.dtype, np.float64))
    non_empty = np.flatnonzero(np.diff(offsets) > 0)
    if len(non_empty):
        sums[non_empty] = np.add.reduceat(values, offsets[non_empty])
    return sums


def condense(values: FloatArray, offsets: Int64Array) -> tuple[FloatArray, Int64Array]:
    """Drop NaN values (unjudged hits) and return the shorter arrays and offsets.

    Examples
    --------
    >>> kept, new_offsets = condense(np.array([1.0, np.nan, 2.0]), np.array([0, 2, 3]))
    >>> kept.tolist(), new_offsets.tolist()
    ([1.0, 2.0], [0, 1, 2])
    """
    keep = ~np.isnan(values)
    kept_before = np.concatenate(([0], np.cumsum(keep)))
    return values[keep], kept_before[offsets]


def padded_rows(
    values: FloatArray, offsets: Int64Array, width: int
) -> tuple[FloatArray, NDArray[np.bool_]]:
    """Gather the first ``width`` values of every segment into an (n, width) matrix.

    Positions past a segment's end are NaN and flagged False in the returned
    mask. This dense view is used when it wastes little memory: it turns the
    discounted sums into one matrix-vector product.

    Examples
    --------
    >>> matrix, present = padded_rows(np.array([1.0, 2.0, 3.0]), np.array([0, 2, 3]), 2)
    >>> matrix.tolist(), present.tolist()
    ([[1.0, 2.0], [3.0, nan]], [[True, True], [True, False]])
    """
    lengths = np.diff(offsets)
    if len(values) == len(lengths) * width and np.all(lengths == width):
        # Equal-length lists (the usual top-k case) need no gather: reshape.
        return values.reshape(len(lengths), width), np.ones((len(lengths), width), dtype=bool)
    columns = np.arange(width)
    present = columns < lengths[:, None]
    if len(values) == 0:
        return np.full(present.shape, np.nan), present
    index = np.minimum(offsets[:-1, None] + columns, len(values) - 1)
    return np.where(present, values[index], np.nan), present


def segment_maxima(values: FloatArray, offsets: Int64Array, empty: float = 0.0) -> FloatArray:
    """Largest value of each segment; ``empty`` for segments with no value.

    Examples
    --------
    >>> segment_maxima(np.array([1.0, 3.0, 2.0]), np.array([0, 2, 2, 3])).tolist()
    [3.0, 0.0, 2.0]
    """
    maxima = np.full(len(offsets) - 1, empty, dtype=np.float64)
    non_empty = np.flatnonzero(np.diff(offsets) > 0)
    if len(non_empty):
        maxima[non_empty] = np.maximum.reduceat(values, offsets[non_empty])
    return maxima


def within_segment_cumsum(values: NDArray, offsets: Int64Array) -> NDArray:
    """Running sum of ``values`` that restarts at the beginning of every segment.

    Examples
    --------
    >>> within_segment_cumsum(np.array([1, 1, 1, 1]), np.array([0, 3, 4])).tolist()
    [1, 2, 3, 1]
    """
    running = np.cumsum(values)
    before = np.concatenate(([0], running))[offsets[:-1]]
    return running - np.repeat(before, np.diff(offsets))


def within_segment_cumprod(values: FloatArray, offsets: Int64Array) -> FloatArray:
    """Running product of ``values`` that restarts at the beginning of every segment.

    One running product over all segments would underflow, and logarithms summed
    over all segments lose digits to cancellation. When the segments are of
    similar lengths (a top k), they are laid out as the rows of a matrix whose
    rows ``np.cumprod`` runs along; otherwise a doubling scan: pass ``j``
    multiplies each value by the partial product ``2**j`` places before it in its
    segment, so ``log2`` of the longest segment passes suffice.

    Examples
    --------
    >>> within_segment_cumprod(np.array([2.0, 3.0, 4.0, 5.0]), np.array([0, 3, 4])).tolist()
    [2.0, 6.0, 24.0, 5.0]
    """
    product = np.array(values, dtype=np.float64)
    longest = int(np.diff(offsets).max(initial=0))
    if (len(offsets) - 1) * longest <= 4 * len(product):
        matrix, present = padded_rows(product, offsets, longest)
        return np.cumprod(np.where(present, matrix, 1.0), axis=1)[present]
    position = positions(offsets)
    step = 1
    while step < longest:
        later = np.flatnonzero(position >= step)
        # The right-hand side is read in full before any value is replaced.
        product[later] = product[later] * product[later - step]
        step *= 2
    return product


def sorted_lookup(sorted_keys: NDArray, values: FloatArray, keys: NDArray) -> FloatArray:
    """``values`` at each of ``keys`` in ``sorted_keys`` (ascending), NaN where absent.

    >>> sorted_lookup(np.array([2, 5]), np.array([0.5, 1.0]), np.array([5, 3, 2])).tolist()
    [1.0, nan, 0.5]
    """
    if not len(sorted_keys):
        return np.full(len(keys), np.nan)
    position = np.searchsorted(sorted_keys, keys)
    safe = np.minimum(position, len(sorted_keys) - 1)
    found = (position < len(sorted_keys)) & (sorted_keys[safe] == keys)
    return np.where(found, values[safe], np.nan)


def pair_keys(query_ids: ArrayLike, document_ids: ArrayLike) -> Int64Array:
    """One sortable int64 per (query, document) pair (ids stay far below 2**31).

    >>> pair_keys(np.array([1, 2]), np.array([3, 4])).tolist()
    [4294967299, 8589934596]
    """
    return (np.asarray(query_ids).astype(np.int64) << 32) | np.asarray(document_ids).astype(
        np.int64
    )
