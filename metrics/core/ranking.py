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

How it stays fast: every docno of both files gets an integer code from one
dictionary (:func:`docno_codes`), so that matching run rows to qrels rows,
finding repeated documents and breaking ties all compare integers, never
strings; and a run already listed in trec_eval's order (the usual case) is
only checked, not sorted.
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


@dataclass(frozen=True)
class DocnoCodes:
    """An integer per docno of the qrels and of the run: equal docnos, equal codes.

    ``ordered`` tells whether the codes also follow the docnos' byte order
    (always so for docnos of at most 8 bytes), so that ties can be broken on
    the codes alone.
    """

    qrels: Int64Array
    run: Int64Array
    count: int
    ordered: bool


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
    n_codes = len(qrels_ids)
    run_codes = _lookup(qrels_ids, run.qids)
    docnos = docno_codes(qrels.docnos, run.docnos)
    kept = run_codes >= 0
    if np.all(kept):
        rows = _rank_order(run_codes, run.values, docnos.run, docnos, run.docnos)
    else:
        kept_rows = np.flatnonzero(kept)
        names = run.docnos[kept_rows] if not docnos.ordered else run.docnos[:0]
        order = _rank_order(
            run_codes[kept_rows], run.values[kept_rows], docnos.run[kept_rows], docnos, names
        )
        rows = kept_rows[order]
    qrels_keys = qrels_codes * docnos.count + docnos.qrels
    run_keys = run_codes[rows] * docnos.count + docnos.run[rows]
    at = _join(qrels, qrels_keys, run, run_keys, rows, n_codes * docnos.count)
    grades = np.where(at >= 0, qrels.values[at], np.nan)
    judged_counts = np.bincount(qrels_codes, minlength=n_codes)
    returned = np.bincount(run_codes[rows], minlength=n_codes)
    evaluated = np.ones(n_codes, bool) if all_qrels_queries else returned > 0
    judged_offsets = offsets_from_lengths(judged_counts)
    qrels_order = np.argsort(qrels_codes, kind="stable")
    judged_rows = qrels_order[_segments_of(judged_offsets, evaluated)]
    return RankedQueries(
        qids=_decoded(qrels_ids[evaluated]),
        in_run=(returned > 0)[evaluated],
        ranked_grades=grades,
        offsets=offsets_from_lengths(returned[evaluated]),
        judged_grades=qrels.values[judged_rows],
        judged_offsets=offsets_from_lengths(judged_counts[evaluated]),
    )


def _decoded(names: NDArray[np.bytes_]) -> list[str]:
    """The names as text; one decode of them all, since none holds a newline."""
    if len(names) == 0:
        return []
    return b"\n".join(names.tolist()).decode(errors="replace").split("\n")


def docno_codes(qrels_docnos: NDArray[np.bytes_], run_docnos: NDArray[np.bytes_]) -> DocnoCodes:
    """Give every docno of both files an integer code from one dictionary.

    Docnos of up to 8 bytes are read as big-endian integers, which order
    like ``strcmp``; their codes are their ranks in the sorted distinct
    values. Longer docnos are grouped by a 64-bit hash, each group checked
    byte for byte against its first member (and hashed again with another
    seed in the unlikely case two docnos share a hash).

    Examples
    --------
    >>> codes = docno_codes(np.array([b"b", b"a"]), np.array([b"c", b"b", b"10"]))
    >>> codes.qrels.tolist(), codes.run.tolist(), codes.count, codes.ordered
    ([2, 1], [3, 2, 0], 4, True)
    """
    n_qrels = len(qrels_docnos)
    width = 8 * max(1, -(-max(qrels_docnos.itemsize, run_docnos.itemsize) // 8))
    words = np.concatenate((_words(qrels_docnos, width), _words(run_docnos, width)))
    if width == 8:
        values = words[:, 0].byteswap()
        distinct = _sorted_distinct(values)
        codes = np.searchsorted(distinct, values)
        return DocnoCodes(codes[:n_qrels], codes[n_qrels:], len(distinct), ordered=True)
    for seed in range(3):
        grouped = _hash_groups(words, np.uint64(seed))
        if grouped is not None:
            codes, count = grouped
            return DocnoCodes(codes[:n_qrels], codes[n_qrels:], count, ordered=False)
    names = np.concatenate((qrels_docnos, run_docnos)).astype(f"S{width}")
    distinct, codes = np.unique(names, return_inverse=True)
    return DocnoCodes(codes[:n_qrels], codes[n_qrels:], len(distinct), ordered=True)


def _sorted_distinct(values: NDArray) -> NDArray:
    """The distinct values, sorted (``np.unique`` without its import of ``numpy.ma``)."""
    ordered = np.sort(values)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))[: len(ordered)]]


def _hash_groups(words: NDArray[np.uint64], seed: np.uint64) -> tuple[Int64Array, int] | None:
    """Codes grouping equal rows of ``words``, or None if two different rows share a hash.

    The row number sits in the low bits of each sort key, so one plain sort
    (much faster than an argsort) gives both the groups and their rows.
    """
    n_rows = len(words)
    row_bits = max(1, n_rows.bit_length())
    hashes = (words[:, 0] ^ _MIX) + seed
    for w in range(words.shape[1]):
        if w:
            hashes ^= words[:, w]
        hashes *= _MIX2
        hashes ^= hashes >> np.uint64(31)
    keys = np.sort(
        (hashes >> np.uint64(row_bits)) << np.uint64(row_bits) | np.arange(n_rows, dtype=np.uint64)
    )
    rows = (keys & np.uint64((1 << row_bits) - 1)).astype(np.int64)
    hashed = keys >> np.uint64(row_bits)
    new_group = np.concatenate(([True], hashed[1:] != hashed[:-1]))
    group = np.cumsum(new_group) - 1
    first_of_group = rows[new_group][group]
    if not np.array_equal(words[rows], words[first_of_group]):
        return None
    codes = np.empty(n_rows, dtype=np.int64)
    codes[rows] = group
    return codes, int(group[-1]) + 1 if n_rows else 0


def _codes(values: NDArray[np.bytes_]) -> tuple[NDArray[np.bytes_], Int64Array]:
    """Sorted distinct values and each row's index among them.

    Files are normally grouped by qid, so the distinct values are first
    looked for among the blocks of equal neighbours, which avoids sorting
    every row.
    """
    if len(values) == 0:
        return values[:0], np.zeros(0, np.int64)
    starts = _block_starts(values)
    firsts = values[starts]
    uniques = _sorted_distinct(firsts)
    codes = np.searchsorted(uniques, firsts)
    return uniques, np.repeat(codes, np.diff(np.append(starts, len(values))))


def _lookup(uniques: NDArray[np.bytes_], values: NDArray[np.bytes_]) -> Int64Array:
    """Index of each value in the sorted ``uniques``, or -1 where it is absent."""
    if len(uniques) == 0 or len(values) == 0:
        return np.full(len(values), -1, np.int64)
    starts = _block_starts(values)
    found = np.searchsorted(uniques, values[starts])
    found = np.minimum(found, len(uniques) - 1)
    found = np.where(uniques[found] == values[starts], found, -1)
    return np.repeat(found, np.diff(np.append(starts, len(values)))).astype(np.int64)


def _block_starts(values: NDArray[np.bytes_]) -> Int64Array:
    """Indices where a run of equal neighbouring values starts (compared as words)."""
    words = _words(values, 8 * max(1, -(-values.itemsize // 8)))
    differs = words[1:, 0] != words[:-1, 0]
    for w in range(1, words.shape[1]):
        differs |= words[1:, w] != words[:-1, w]
    return np.flatnonzero(np.concatenate(([True], differs)))


def _rank_order(
    codes: Int64Array,
    scores: NDArray[np.float64],
    docno_codes: Int64Array,
    docnos: DocnoCodes,
    names: NDArray[np.bytes_],
) -> Int64Array:
    """Row order by query, then score descending, then docno descending."""
    n_rows = len(codes)
    if n_rows == 0:
        return np.zeros(0, np.int64)
    starts = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1])))
    lengths = np.diff(np.append(starts, n_rows))
    block_codes = np.sort(codes[starts])
    one_block_per_query = not np.any(block_codes[1:] == block_codes[:-1])
    if one_block_per_query and _ranked_within_blocks(codes, scores, docno_codes, docnos, names):
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
    # docnos' order.
    tie_rank = np.zeros(n_rows, dtype=np.int64)
    tied_rows = order[tied]
    if docnos.ordered:
        tie_rank[tied_rows] = docno_codes[tied_rows]
    else:
        by_name = np.argsort(names[tied_rows], kind="stable")
        tie_rank[tied_rows[by_name]] = np.arange(len(tied_rows))
    return np.lexsort((-tie_rank, -scores, codes))


def _ranked_within_blocks(
    codes: Int64Array,
    scores: NDArray[np.float64],
    docno_codes: Int64Array,
    docnos: DocnoCodes,
    names: NDArray[np.bytes_],
) -> bool:
    """True when, inside each run of equal codes, rows are in trec_eval's order."""
    same_query = codes[1:] == codes[:-1]
    if np.any(same_query & (scores[:-1] < scores[1:])):
        return False
    tie = np.flatnonzero(same_query & (scores[:-1] == scores[1:]))
    if docnos.ordered:
        return bool(np.all(docno_codes[tie] > docno_codes[tie + 1]))
    return bool(np.all(names[tie] > names[tie + 1]))


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


def _words(docnos: NDArray, width: int) -> NDArray[np.uint64]:
    """The byte strings as (rows, width / 8) little-endian words, zero padded."""
    if docnos.itemsize == width:
        return np.ascontiguousarray(docnos).view("<u8").reshape(len(docnos), width // 8)
    # Copying raw bytes into a zeroed matrix is much cheaper than a string cast.
    padded = np.zeros((len(docnos), width), dtype=np.uint8)
    raw = np.ascontiguousarray(docnos).view(np.uint8).reshape(len(docnos), docnos.itemsize)
    padded[:, : docnos.itemsize] = raw
    return padded.view("<u8")


def _join(
    qrels: TrecColumns,
    qrels_keys: Int64Array,
    run: TrecColumns,
    run_keys: Int64Array,
    rows: Int64Array,
    n_keys: int,
) -> Int64Array:
    """The qrels row of each ranked run row (-1 when unjudged), after the duplicate checks.

    Keys are ``query code * docnos + docno code``: equal keys, same query and
    document. A key space not much larger than the files is a direct table;
    a larger one is searched in sorted keys.
    """
    qrels_rows = np.arange(len(qrels_keys))
    if n_keys > 4 * (len(qrels_keys) + len(run_keys)):
        _check_unique(run, run_keys, rows)
        order = _check_unique(qrels, qrels_keys, qrels_rows)
        if len(order) == 0:
            return np.full(len(run_keys), -1, np.int64)
        sorted_keys = qrels_keys[order]
        at = np.minimum(np.searchsorted(sorted_keys, run_keys), len(order) - 1)
        return np.where(sorted_keys[at] == run_keys, order[at], -1)
    table = np.full(n_keys, -1, dtype=np.int32 if len(run_keys) < 2**31 else np.int64)
    # A row that finds another row in its slot after all are written shares
    # its key with that row; the sorting check then names the first such pair.
    table[run_keys] = rows
    if not np.array_equal(table[run_keys], rows):
        _check_unique(run, run_keys, rows)
    table.fill(-1)
    table[qrels_keys] = qrels_rows
    if not np.array_equal(table[qrels_keys], qrels_rows):
        _check_unique(qrels, qrels_keys, qrels_rows)
    return table[run_keys].astype(np.int64)


def _check_unique(table: TrecColumns, keys: Int64Array, rows: Int64Array) -> Int64Array:
    """Raise on a (qid, docno) key listed twice, naming the earliest such pair of lines.

    Returns the order that sorts the keys (rows ascending among equal keys).
    """
    order = np.lexsort((rows, keys))
    ordered = keys[order]
    repeated = np.flatnonzero(ordered[1:] == ordered[:-1])
    if len(repeated):
        firsts, seconds = rows[order[repeated]], rows[order[repeated + 1]]
        i = int(np.argmin(seconds))
        first_line, second_line = int(table.lines[firsts[i]]), int(table.lines[seconds[i]])
        docno = table.docnos[firsts[i]].decode(errors="replace")
        qid = table.qids[firsts[i]].decode(errors="replace")
        problem = f"document {docno} is listed twice for query {qid} (first on line {first_line})"
        raise TrecFormatError(table.path, second_line, problem)
    return order
