"""From parsed qrels and run columns to per-query ranked grades, as trec_eval ranks.

Ranking follows trec_eval 10 exactly: the scores (parsed as doubles) are
sorted from high to low, ties are broken by docno in descending byte order
(``strcmp``, so ``"9"`` ranks above ``"10"`` and case matters), and the rank
column of the run is ignored. Each returned document then takes its qrels
grade, or NaN when the query has no judgement for it.

The evaluated queries are those present in both files, or, with
``all_qrels_queries=True`` (trec_eval's ``-c``), every query of the qrels, a
query missing from the run counting as an empty result list. Queries only in
the run are not evaluated. Queries are listed in ``strcmp`` order, like
trec_eval's output.

A document listed twice for one query, in either file, is an error, as in
trec_eval.

How it stays fast: a run already listed in trec_eval's order (the usual
case) is only checked, not sorted, its queries handled as blocks of rows;
judged rows are matched by :mod:`metrics.core.trec_pairs`.
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from metrics.core.segments import Int64Array, offsets_from_lengths
from metrics.core.trec import TrecColumns
from metrics.core.trec_pairs import as_words, judged_pairs


@dataclass(frozen=True)
class RankedQueries:
    """Ranked grades and judged grades of the evaluated queries, flat with offsets."""

    qids: list[str]
    in_run: NDArray[np.bool_]
    ranked_grades: NDArray[np.float64]
    offsets: Int64Array
    judged_grades: NDArray[np.float64]
    judged_offsets: Int64Array


class _Blocks(NamedTuple):
    """Runs of neighbouring rows with the same qid: first row, length and query code."""

    starts: Int64Array
    lengths: Int64Array
    codes: Int64Array


def rank_queries(
    qrels: TrecColumns, run: TrecColumns, *, all_qrels_queries: bool = False
) -> RankedQueries:
    """Rank the run's documents per query and attach their qrels grades.

    Parameters
    ----------
    qrels, run : TrecColumns
        From :func:`metrics.core.trec.read_qrels` and ``read_run``.
    all_qrels_queries : bool, default=False
        Evaluate every qrels query (trec_eval ``-c``) rather than only those
        present in both files.

    Returns
    -------
    ranked : RankedQueries

    Raises
    ------
    TrecFormatError
        When a document is listed twice for the same query.

    References
    ----------
    .. [1] trec_eval, ``form_res_rels.c`` (ranking and tie-breaking).

    Examples
    --------
    >>> from metrics.core.trec import parse_qrels, parse_run
    >>> qrels = parse_qrels(b"q1 0 10 1\\nq1 0 9 2\\n")
    >>> run = parse_run(b"q1 Q0 10 1 0.5 t\\nq1 Q0 9 2 0.5 t\\nq1 Q0 x 3 0.7 t\\n")
    >>> ranked = rank_queries(qrels, run)
    >>> ranked.qids, ranked.ranked_grades.tolist()
    (['q1'], [nan, 2.0, 1.0])
    """
    qrels_ids, qrels_blocks = _blocks(qrels.qids)
    n_codes = len(qrels_ids)
    blocks, kept_rows = _kept_blocks(qrels_ids, run.qids)
    scores, docnos = run.values, run.docnos
    if kept_rows is not None:
        scores, docnos = scores[kept_rows], docnos[kept_rows]
    order = _rank_order(scores, docnos, blocks)
    judged, returned_judged = judged_pairs(qrels, qrels_blocks, run, kept_rows, blocks, docnos)
    grades = np.full(len(scores), np.nan)
    grades[returned_judged] = qrels.values[judged]
    judged_counts = _rows_per_code(qrels_blocks, n_codes)
    returned = _rows_per_code(blocks, n_codes)
    evaluated = np.ones(n_codes, bool) if all_qrels_queries else returned > 0
    judged_rows = _rows_by_code(qrels_blocks, evaluated)
    return RankedQueries(
        qids=_decoded(qrels_ids[evaluated]),
        in_run=(returned > 0)[evaluated],
        ranked_grades=grades if order is None else grades[order],
        offsets=offsets_from_lengths(returned[evaluated]),
        judged_grades=qrels.values if judged_rows is None else qrels.values[judged_rows],
        judged_offsets=offsets_from_lengths(judged_counts[evaluated]),
    )


def _rows_per_code(blocks: _Blocks, n_codes: int) -> Int64Array:
    """How many rows each code has, over its blocks."""
    return np.bincount(blocks.codes, weights=blocks.lengths, minlength=n_codes).astype(np.int64)


def _decoded(names: NDArray[np.bytes_]) -> list[str]:
    """The names as text; one decode of them all, since none holds a newline."""
    if len(names) == 0:
        return []
    return b"\n".join(names.tolist()).decode(errors="replace").split("\n")


def _sorted_distinct(values: NDArray) -> NDArray:
    """The distinct values, sorted (``np.unique`` without its import of ``numpy.ma``)."""
    ordered = np.sort(values)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))[: len(ordered)]]


def _blocks(values: NDArray[np.bytes_]) -> tuple[NDArray[np.bytes_], _Blocks]:
    """Sorted distinct values, and the blocks of equal neighbouring values with their index.

    Files are normally grouped by qid, so the distinct values are looked for
    among the blocks' first values, which avoids sorting every row.
    """
    if len(values) == 0:
        empty = np.zeros(0, np.int64)
        return values[:0], _Blocks(empty, empty, empty)
    starts = _block_starts(values)
    firsts = values[starts]
    uniques = _sorted_distinct(firsts)
    codes = np.searchsorted(uniques, firsts)
    return uniques, _Blocks(starts, np.diff(np.append(starts, len(values))), codes)


def _rows_by_code(blocks: _Blocks, selected: NDArray[np.bool_] | None) -> Int64Array | None:
    """The rows of the blocks whose code is selected (None: all), ordered by code, stably.

    None when that is every row in its own order.
    """
    block_order = np.argsort(blocks.codes, kind="stable")
    if selected is not None:
        block_order = block_order[selected[blocks.codes[block_order]]]
    if len(block_order) == len(blocks.codes) and np.all(block_order[1:] > block_order[:-1]):
        return None
    lengths = blocks.lengths[block_order]
    offsets = offsets_from_lengths(lengths)
    rows = np.repeat(blocks.starts[block_order] - offsets[:-1], lengths)
    rows += np.arange(offsets[-1])
    return rows


def _kept_blocks(
    uniques: NDArray[np.bytes_], qids: NDArray[np.bytes_]
) -> tuple[_Blocks, Int64Array | None]:
    """The run's blocks of rows whose qid is among ``uniques``, and those rows.

    The rows are None when every row is kept; block starts then index the
    run, otherwise the kept rows.
    """
    if len(qids) == 0 or len(uniques) == 0:
        empty = np.zeros(0, np.int64)
        return _Blocks(empty, empty, empty), (None if len(qids) == 0 else empty)
    starts = _block_starts(qids)
    lengths = np.diff(np.append(starts, len(qids)))
    found = np.minimum(np.searchsorted(uniques, qids[starts]), len(uniques) - 1)
    codes = np.where(uniques[found] == qids[starts], found, -1).astype(np.int64)
    kept = codes >= 0
    if np.all(kept):
        return _Blocks(starts, lengths, codes), None
    lengths, codes = lengths[kept], codes[kept]
    offsets = offsets_from_lengths(lengths)
    rows = np.repeat(starts[kept] - offsets[:-1], lengths) + np.arange(offsets[-1])
    return _Blocks(offsets[:-1], lengths, codes), rows


def _block_starts(values: NDArray[np.bytes_]) -> Int64Array:
    """Indices where a run of equal neighbouring values starts (compared as words)."""
    words = as_words(values, 8 * max(1, -(-values.itemsize // 8)))
    differs = words[1:, 0] != words[:-1, 0]
    for w in range(1, words.shape[1]):
        differs |= words[1:, w] != words[:-1, w]
    return np.flatnonzero(np.concatenate(([True], differs)))


def _rank_order(
    scores: NDArray[np.float64], docnos: NDArray[np.bytes_], blocks: _Blocks
) -> Int64Array | None:
    """Row order by query, then score descending, then docno descending (None: as they are)."""
    n_rows = len(scores)
    if n_rows == 0:
        return np.zeros(0, np.int64)
    ordered_codes = np.sort(blocks.codes)
    if not np.any(ordered_codes[1:] == ordered_codes[:-1]):
        # Most run files list each query's hits together and by score; then
        # only the blocks need putting in query order, and tied hits in
        # docno order.
        within = _order_within_blocks(scores, docnos, blocks.starts)
        if within is not _UNRANKED:
            by_code = _rows_by_code(blocks, None)
            if within is None:
                return by_code
            return within if by_code is None else within[by_code]
    codes = np.repeat(blocks.codes, blocks.lengths)
    order = np.lexsort((-scores, codes))
    tied = _tied_with_a_neighbour(codes[order], scores[order])
    if not np.any(tied):
        return order
    # Only rows sharing a score with another row of their query need the
    # docnos' order.
    tie_rank = np.zeros(n_rows, dtype=np.int64)
    tied_rows = order[tied]
    by_name = np.argsort(docnos[tied_rows], kind="stable")
    tie_rank[tied_rows[by_name]] = np.arange(len(tied_rows))
    return np.lexsort((-tie_rank, -scores, codes))


_UNRANKED = np.zeros(0, np.int64)  # Rows whose scores rise somewhere inside a block.


def _order_within_blocks(
    scores: NDArray[np.float64], docnos: NDArray[np.bytes_], starts: Int64Array
) -> Int64Array | None:
    """trec_eval's order of the rows, each block kept in place, when scores never rise in a block.

    None when the rows are in that order already; ``_UNRANKED`` when a
    score rises inside a block. Only runs of tied rows are reordered, by
    docno descending.
    """
    last_of_block = starts[1:] - 1  # Row i and row i + 1 belong to different queries.
    worse_next = scores[:-1] < scores[1:]
    worse_next[last_of_block] = False
    if np.any(worse_next):
        return _UNRANKED
    tied_next = scores[:-1] == scores[1:]
    tied_next[last_of_block] = False
    tie = np.flatnonzero(tied_next)
    if np.all(docnos[tie] > docnos[tie + 1]):
        return None
    tied = np.zeros(len(scores), dtype=bool)
    tied[tie] = tied[tie + 1] = True
    rows = np.flatnonzero(tied)
    # A run of tied rows starts at a row not tied with the row before it.
    run = np.cumsum(np.concatenate(([True], ~tied_next[rows[1:] - 1])))
    name_rank = np.empty(len(rows), dtype=np.int64)
    name_rank[np.argsort(docnos[rows], kind="stable")] = np.arange(len(rows))
    order = np.arange(len(scores))
    order[rows] = rows[np.lexsort((-name_rank, run))]
    return order


def _tied_with_a_neighbour(codes: Int64Array, scores: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Mask of sorted rows whose query and score equal those of the row before or after."""
    equal_next = (codes[1:] == codes[:-1]) & (scores[1:] == scores[:-1])
    tied = np.zeros(len(codes), dtype=bool)
    tied[:-1] |= equal_next
    tied[1:] |= equal_next
    return tied
