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
"""

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from metrics.core.segments import Int64Array, offsets_from_lengths, positions
from metrics.core.trec import TrecColumns, TrecFormatError

_MIX = np.uint64(0x9E3779B97F4A7C15)  # Odd constants of the splitmix64 mixer.
_MIX2 = np.uint64(0xBF58476D1CE4E5B9)


@dataclass(frozen=True)
class RankedQueries:
    """Ranked grades and judged grades of the evaluated queries, flat with offsets."""

    qids: list[str]
    in_run: NDArray[np.bool_]
    ranked_grades: NDArray[np.float64]
    offsets: Int64Array
    judged_grades: NDArray[np.float64]
    judged_offsets: Int64Array


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
    qrels_ids, qrels_codes = _codes(qrels.qids)
    qrels_order = np.argsort(qrels_codes, kind="stable")
    judged_counts = np.bincount(qrels_codes, minlength=len(qrels_ids))
    run_codes = _lookup(qrels_ids, run.qids)
    kept = run_codes >= 0
    if np.all(kept):
        rows = _rank_order(run_codes, run.values, run.docnos)
    else:
        kept_rows = np.flatnonzero(kept)
        order = _rank_order(run_codes[kept], run.values[kept], run.docnos[kept])
        rows = kept_rows[order]
    grades = _grades(qrels, qrels_codes, run, run_codes, rows)
    returned = np.bincount(run_codes[rows], minlength=len(qrels_ids))
    evaluated = np.ones(len(qrels_ids), bool) if all_qrels_queries else returned > 0
    judged_offsets = offsets_from_lengths(judged_counts)
    judged_rows = qrels_order[_segments_of(judged_offsets, evaluated)]
    return RankedQueries(
        qids=[q.decode(errors="replace") for q in qrels_ids[evaluated].tolist()],
        in_run=(returned > 0)[evaluated],
        ranked_grades=grades,
        offsets=offsets_from_lengths(returned[evaluated]),
        judged_grades=qrels.values[judged_rows],
        judged_offsets=offsets_from_lengths(judged_counts[evaluated]),
    )


def _codes(values: NDArray[np.bytes_]) -> tuple[NDArray[np.bytes_], Int64Array]:
    """Sorted distinct values and each row's index among them.

    Files are normally grouped by qid, so the distinct values are first
    looked for among the blocks of equal neighbours, which avoids sorting
    every row.
    """
    if len(values) == 0:
        return values[:0], np.zeros(0, np.int64)
    starts = np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1])))
    uniques, block_codes = np.unique(values[starts], return_inverse=True)
    if len(uniques) == len(starts):
        return uniques, np.repeat(block_codes, np.diff(np.append(starts, len(values))))
    uniques, codes = np.unique(values, return_inverse=True)
    return uniques, codes.astype(np.int64)


def _lookup(uniques: NDArray[np.bytes_], values: NDArray[np.bytes_]) -> Int64Array:
    """Index of each value in the sorted ``uniques``, or -1 where it is absent."""
    if len(uniques) == 0:
        return np.full(len(values), -1, np.int64)
    starts = np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1])))
    found = np.searchsorted(uniques, values[starts])
    found = np.minimum(found, len(uniques) - 1)
    found = np.where(uniques[found] == values[starts], found, -1)
    return np.repeat(found, np.diff(np.append(starts, len(values)))).astype(np.int64)


def _rank_order(codes: Int64Array, scores: NDArray[np.float64], docnos: NDArray) -> Int64Array:
    """Row order by query, then score descending, then docno descending."""
    n_rows = len(codes)
    starts = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1])))[: n_rows or 0]
    lengths = np.diff(np.append(starts, n_rows))
    one_block_per_query = len(np.unique(codes[starts])) == len(starts)
    if one_block_per_query and _ranked_within_blocks(codes, scores, docnos):
        # Most run files list each query's hits together and in rank order;
        # then only the blocks need putting in query order.
        block_order = np.argsort(codes[starts], kind="stable")
        ordered_lengths = lengths[block_order]
        within = positions(offsets_from_lengths(ordered_lengths))
        return np.repeat(starts[block_order], ordered_lengths) + within
    order = np.lexsort((-scores, codes))
    tied = _tied_with_a_neighbour(codes[order], scores[order])
    if not np.any(tied):
        return order
    # Only rows sharing a score with another row of their query need the
    # (slow) byte-string comparison of docnos.
    docno_rank = np.zeros(n_rows, dtype=np.int64)
    _, tied_rank = np.unique(docnos[order[tied]], return_inverse=True)
    docno_rank[order[tied]] = tied_rank
    return np.lexsort((-docno_rank, -scores, codes))


def _ranked_within_blocks(codes: Int64Array, scores: NDArray[np.float64], docnos: NDArray) -> bool:
    """True when, inside each run of equal codes, rows are in trec_eval's order."""
    same_query = codes[1:] == codes[:-1]
    if np.any(same_query & (scores[:-1] < scores[1:])):
        return False
    tie = np.flatnonzero(same_query & (scores[:-1] == scores[1:]))
    return bool(np.all(docnos[tie] > docnos[tie + 1]))


def _tied_with_a_neighbour(codes: Int64Array, scores: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Mask of sorted rows whose query and score equal those of the row before or after."""
    equal_next = (codes[1:] == codes[:-1]) & (scores[1:] == scores[:-1])
    tied = np.zeros(len(codes), dtype=bool)
    tied[:-1] |= equal_next
    tied[1:] |= equal_next
    return tied


def _segments_of(offsets: Int64Array, selected: NDArray[np.bool_]) -> Int64Array:
    """Indices of the values of the selected segments, in segment order."""
    lengths = np.diff(offsets)[selected]
    return np.repeat(offsets[:-1][selected], lengths) + positions(offsets_from_lengths(lengths))


def _keys(codes: Int64Array, docnos: NDArray, width: int, n_codes: int) -> NDArray[np.uint64]:
    """64-bit key of (query code, docno): the code in the high bits, a docno hash below.

    Equal pairs always get equal keys. Putting the code first keeps each
    query's keys together once sorted, so looking up a query's documents
    touches one small region of memory instead of the whole table.
    """
    words = _words(docnos, width)
    hashes = words[:, 0] ^ _MIX
    for w in range(words.shape[1]):
        # In-place steps avoid allocating a new large array for each one.
        if w:
            hashes ^= words[:, w]
        hashes *= _MIX2
        hashes ^= hashes >> np.uint64(31)
    code_bits = max(1, int(n_codes).bit_length())
    hashes >>= np.uint64(code_bits)
    hashes |= codes.astype(np.uint64) << np.uint64(64 - code_bits)
    return hashes


def _words(docnos: NDArray, width: int) -> NDArray[np.uint64]:
    """The byte strings as (rows, width / 8) little-endian words, zero padded."""
    if docnos.itemsize == width:
        return np.ascontiguousarray(docnos).view("<u8").reshape(len(docnos), width // 8)
    # Copying raw bytes into a zeroed matrix is much cheaper than a string cast.
    padded = np.zeros((len(docnos), width), dtype=np.uint8)
    raw = np.ascontiguousarray(docnos).view(np.uint8).reshape(len(docnos), docnos.itemsize)
    padded[:, : docnos.itemsize] = raw
    return padded.view("<u8")


def _grades(
    qrels: TrecColumns,
    qrels_codes: Int64Array,
    run: TrecColumns,
    run_codes: Int64Array,
    rows: Int64Array,
) -> NDArray[np.float64]:
    """Grade of each ranked run row (NaN when unjudged), after duplicate checks."""
    width = 8 * -(-max(qrels.docnos.itemsize, run.docnos.itemsize) // 8)
    n_codes = int(qrels_codes.max(initial=0)) + 1
    qrels_keys = _keys(qrels_codes, qrels.docnos, width, n_codes)
    # Keys are made in file order and then moved, which is cheaper than
    # moving the byte strings first.
    run_keys = _keys(np.maximum(run_codes, 0), run.docnos, width, n_codes)[rows]
    _check_duplicates(run, run_codes, rows, run_keys)
    # Rows come grouped by query, so a stable (merging) sort mostly sorts
    # short runs, which is much cheaper than a sort of scattered keys.
    order = np.argsort(qrels_keys, kind="stable")
    sorted_keys = qrels_keys[order]
    if len(sorted_keys) == 0:
        return np.full(len(rows), np.nan)
    repeated_key = bool(np.any(sorted_keys[1:] == sorted_keys[:-1]))
    if repeated_key:
        _check_duplicates(qrels, qrels_codes, np.arange(len(qrels_codes)), qrels_keys)
    at = order[np.minimum(np.searchsorted(sorted_keys, run_keys), len(order) - 1)]
    hit = np.flatnonzero(qrels_keys[at] == run_keys)
    # Equal keys almost surely mean equal pairs; checking the bytes makes it certain.
    matched, hit_rows = at[hit], rows[hit]
    same = (qrels_codes[matched] == run_codes[hit_rows]) & (
        qrels.docnos[matched] == run.docnos[hit_rows]
    )
    if repeated_key or not np.all(same):
        return _grades_exact(qrels, qrels_codes, run, run_codes, rows)
    grades = np.full(len(rows), np.nan)
    grades[hit] = qrels.values[matched]
    return grades


def _grades_exact(
    qrels: TrecColumns,
    qrels_codes: Int64Array,
    run: TrecColumns,
    run_codes: Int64Array,
    rows: Int64Array,
) -> NDArray[np.float64]:
    """Slower join by sorted docno codes, used only if two keys' hashes collide."""
    width = max(qrels.docnos.itemsize, run.docnos.itemsize)
    names, docno_codes = np.unique(
        np.concatenate((qrels.docnos.astype(f"S{width}"), run.docnos[rows].astype(f"S{width}"))),
        return_inverse=True,
    )
    keys = np.concatenate((qrels_codes, run_codes[rows])) * len(names) + docno_codes
    qrels_keys, run_keys = keys[: len(qrels_codes)], keys[len(qrels_codes) :]
    order = np.argsort(qrels_keys)
    at = order[np.minimum(np.searchsorted(qrels_keys[order], run_keys), len(order) - 1)]
    return np.where(qrels_keys[at] == run_keys, qrels.values[at], np.nan)


def _check_duplicates(
    table: TrecColumns, codes: Int64Array, rows: Int64Array, hashes: NDArray[np.uint64]
) -> None:
    """Raise on a (qid, docno) pair listed twice, naming both lines."""
    # Sorting the bare hashes is cheaper than an argsort; the positions are
    # only needed when two hashes are equal.
    ordered = np.sort(hashes, kind="stable")
    if not np.any(ordered[1:] == ordered[:-1]):
        return
    order = np.argsort(hashes, kind="stable")
    ordered = hashes[order]
    for i in np.flatnonzero(ordered[1:] == ordered[:-1]):
        a, b = rows[order[i]], rows[order[i + 1]]
        if codes[a] == codes[b] and table.docnos[a] == table.docnos[b]:
            first, second = sorted((int(table.lines[a]), int(table.lines[b])))
            docno = table.docnos[a].decode(errors="replace")
            qid = table.qids[a].decode(errors="replace")
            problem = f"document {docno} is listed twice for query {qid} (first on line {first})"
            raise TrecFormatError(table.path, second, problem)
