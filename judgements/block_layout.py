"""The layout of a packed block (judgements_rankedblock), written and read: how the
RankedGrades rows of a list's block of queries become one row (``block_columns``,
which judgements.packed writes) and how a reader gets the grades back
(``decoded``, ``query_major``; metrics.selectors reads).

A block keeps its grades as a dictionary and codes (``block_codes``): its distinct
values, and codes of the fewest bytes that tell them apart (``code_width``). The hits'
codes come rank by rank (``rank_major``), so that a list's top k is one prefix of each
block; the judged grades' codes one by one, highest first, query after query.
"""

import itertools
import struct

import numpy as np

from metrics.core.segments import offsets_from_lengths

# Each query's fixed part of the RankedGrades rows of a block, joined
# (judgements.packed.BLOCK_ROWS_SQL).
ROWS_HEADER = np.dtype(
    [("query_id", ">i8"), ("hits", ">i4"), ("levels", ">i4"), ("graded", ">i4")]
)
# Each query's fixed part of a block (RankedBlock.header): its judged grades counted
# one by one instead of its levels.
BLOCK_HEADER = np.dtype(
    [("query_id", ">i8"), ("hits", ">i4"), ("judged", ">i4"), ("graded", ">i4")]
)
# A block's grades are codes into its dictionary (RankedBlock.grades), of the width
# its dictionary needs (RankedBlock.width): one byte for up to 256 distinct grades.
CODE_TYPES = {1: np.dtype("u1"), 2: np.dtype(">u2"), 4: np.dtype(">u4")}
INT4_OID = 23


def block_columns(header, ranked, ideal, counts) -> list[bytes]:
    """A block's columns in COPY's binary format (header, rank_ends, grades, width,
    ranked, judged: RankedBlock's) from its queries' RankedGrades rows joined (the
    columns of a row of judgements.packed.BLOCK_ROWS_SQL)."""
    queries = np.frombuffer(header, dtype=ROWS_HEADER)
    by_rank, rank_ends = rank_major(
        np.frombuffer(ranked, dtype=">f8"), queries["hits"].astype(np.int64)
    )
    # The judged grades one by one, highest first (each level as often as its count).
    counts = np.frombuffer(counts, dtype=">i4").astype(np.int64)
    judged = np.repeat(np.frombuffer(ideal, dtype=">f8"), counts)
    judged_so_far = offsets_from_lengths(counts)
    level_offsets = offsets_from_lengths(queries["levels"].astype(np.int64))
    block_header = np.empty(len(queries), dtype=BLOCK_HEADER)
    for column in ("query_id", "hits", "graded"):
        block_header[column] = queries[column]
    block_header["judged"] = np.diff(judged_so_far[level_offsets])
    grades, width, codes = block_codes(np.concatenate([by_rank, judged]))
    # An int4[] in the binary format: one dimension, no NULL, then (length, value) each.
    elements = np.empty((len(rank_ends), 2), dtype=">i4")
    elements[:, 0], elements[:, 1] = 4, rank_ends
    array = struct.pack(">iiiii", 1, 0, INT4_OID, len(rank_ends), 1) + elements.tobytes()
    return [
        block_header.tobytes(),
        array,
        grades.astype(">f8").tobytes(),
        struct.pack(">h", width),
        codes[: len(by_rank)].tobytes(),
        codes[len(by_rank) :].tobytes(),
    ]


def block_codes(values: np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
    """A block's grades as a dictionary and codes: the distinct values (float64, told
    apart by their bits, so that every value, -0.0 and NaN too, comes back as it was),
    the width of a code in bytes (``code_width``) and each value's code (of
    ``CODE_TYPES[width]``). A whole list's read is then a third of the bytes: the
    grades of a consensus policy are few.

    >>> grades, width, codes = block_codes(np.array([2.0, np.nan, 0.5, 2.0]))
    >>> width, grades[codes].tolist()[::2], np.isnan(grades[codes][1])
    (1, [2.0, 0.5], np.True_)
    """
    native = np.ascontiguousarray(values, dtype=np.float64)
    distinct, codes = np.unique(native.view(np.int64), return_inverse=True)
    width = code_width(len(distinct))
    return distinct.view(np.float64), width, codes.astype(CODE_TYPES[width])


def code_width(distinct: int) -> int:
    """Bytes per code for a dictionary of ``distinct`` grades.

    >>> code_width(256), code_width(257), code_width(65_537)
    (1, 2, 4)
    """
    return 1 if distinct <= 1 << 8 else 2 if distinct <= 1 << 16 else 4


def rank_major(values: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Segments of ``values`` (query after query, of ``lengths``) rank by rank: every
    segment's first value, then every second value, ... And how many values the first
    ``r`` ranks hold, for ``r`` from 1 to the longest segment.

    >>> by_rank, ends = rank_major(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), np.array([2, 0, 3]))
    >>> by_rank.tolist(), ends.tolist()
    ([1.0, 3.0, 2.0, 4.0, 5.0], [2, 4, 5])
    """
    longest = int(lengths.max()) if len(lengths) else 0
    present = np.arange(longest)[:, None] < lengths[None, :]
    starts = np.cumsum(lengths) - lengths
    rank, segment = np.nonzero(present)
    return values[starts[segment] + rank], np.cumsum(present.sum(axis=1))


def query_major(by_rank: np.ndarray, lengths: np.ndarray, blocks: np.ndarray) -> np.ndarray:
    """The inverse of ``rank_major`` over consecutive blocks: ``by_rank`` holds each
    block's values rank by rank, block after block, of segments of ``lengths`` whose
    block is ``blocks`` (non-decreasing); the values come back segment after segment.

    >>> by_rank = np.array([1.0, 3.0, 2.0, 4.0, 5.0, 6.0])
    >>> query_major(by_rank, np.array([2, 0, 3, 1]), np.array([0, 0, 0, 1])).tolist()
    [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    """
    if len(lengths) == 0:
        return by_rank[:0].copy()
    first = np.flatnonzero(np.r_[True, blocks[1:] != blocks[:-1]])
    if lengths.min() == lengths.max():
        return _uniform_query_major(by_rank, int(lengths[0]), np.diff(np.r_[first, len(blocks)]))
    # Each block a row and each of its segments a column (zero-length padding after).
    row = np.repeat(np.arange(len(first)), np.diff(np.r_[first, len(blocks)]))
    column = np.arange(len(blocks)) - first[row]
    padded = np.zeros((len(first), int(column.max()) + 1), dtype=np.int64)
    padded[row, column] = lengths
    starts = np.zeros_like(padded)
    starts[row, column] = np.cumsum(lengths) - lengths
    longest = int(lengths.max())
    # For each (block, rank, segment) that holds a value, in the order the values come
    # (block by block, rank by rank), where it goes; a few blocks at a time (<= 32 MB).
    out = np.empty(len(by_rank), dtype=by_rank.dtype)
    step = max(1, 2**22 // (longest * padded.shape[1] or 1))
    ranks = np.arange(longest)[None, :, None]
    done = 0
    for begin in range(0, len(first), step):
        rows = slice(begin, begin + step)
        present = ranks < padded[rows, None, :]
        target = (starts[rows, None, :] + ranks)[present]
        out[target] = by_rank[done : done + len(target)]
        done += len(target)
    return out


def _uniform_query_major(by_rank: np.ndarray, length: int, sizes: np.ndarray) -> np.ndarray:
    """``query_major`` when every segment has ``length`` values (a top k that every
    query fills): each block of ``sizes[b]`` segments is a (length, size) matrix,
    transposed; consecutive blocks of one size at once."""
    out = np.empty_like(by_rank)
    runs = np.flatnonzero(np.r_[True, sizes[1:] != sizes[:-1], True])
    done = 0
    for begin, end in itertools.pairwise(runs.tolist()):
        size, count = int(sizes[begin]), end - begin
        values = by_rank[done : done + count * size * length]
        out[done : done + len(values)] = (
            values.reshape(count, length, size).transpose(0, 2, 1).ravel()
        )
        done += len(values)
    return out


def decoded(grades: np.ndarray, starts: np.ndarray, columns: list, widths: list[int]):
    """The values of blocks' codes (``columns``, of ``widths`` bytes each), block after
    block: each code picks from its block's ``grades``, which start at ``starts``.

    >>> grades, starts = np.array([0.0, 2.0, 1.0, 3.0]), np.array([0, 2])
    >>> decoded(grades, starts, [bytes([1, 0]), bytes([1, 1, 0])], [1, 1]).tolist()
    [2.0, 0.0, 3.0, 3.0, 1.0]
    >>> decoded(grades, starts, [bytes([0, 1]), bytes([1])], [2, 1]).tolist()
    [2.0, 3.0]
    """
    lengths = [len(column) // width for column, width in zip(columns, widths, strict=True)]
    if len(set(widths)) <= 1:
        kind = CODE_TYPES[widths[0] if widths else 1]
        codes = np.frombuffer(b"".join(columns), dtype=kind)
    else:
        codes = np.concatenate([
            np.frombuffer(column, dtype=CODE_TYPES[width]).astype(np.intp)
            for column, width in zip(columns, widths, strict=True)
        ])  # fmt: skip
    return grades.take(np.repeat(starts, lengths) + codes)
