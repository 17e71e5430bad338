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
and every (query, docno) pair of both files is hashed to 64 bits and the
hashes sorted once, with each row's number in their low bits (one plain
sort of integers, far cheaper than sorting strings or an argsort), so that
a judged run row lands next to its qrels row and a row listed twice next to
its twin. Neighbours with equal hashes are then compared byte for byte, so
a hash shared by two different pairs costs time, never a wrong match.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from metrics.core.segments import Int64Array, offsets_from_lengths
from metrics.core.trec import TrecColumns, TrecFormatError

_MIX2 = np.uint64(0xBF58476D1CE4E5B9)  # An odd constant of the splitmix64 mixer.


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
class _Blocks:
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
    qrels_codes = np.repeat(qrels_blocks.codes, qrels_blocks.lengths)
    n_codes = len(qrels_ids)
    blocks, kept_rows = _kept_blocks(qrels_ids, run.qids)
    codes = np.repeat(blocks.codes, blocks.lengths)
    scores, docnos = run.values, run.docnos
    if kept_rows is not None:
        scores, docnos = scores[kept_rows], docnos[kept_rows]
    order = _rank_order(codes, scores, docnos, blocks)
    judged, returned_judged = _judged_pairs(qrels, qrels_codes, run, kept_rows, codes, docnos)
    grades = np.full(len(codes), np.nan)
    grades[returned_judged] = qrels.values[judged]
    judged_counts = np.bincount(qrels_codes, minlength=n_codes)
    returned = np.bincount(blocks.codes, weights=blocks.lengths, minlength=n_codes)
    returned = returned.astype(np.int64)
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
    words = _words(values, 8 * max(1, -(-values.itemsize // 8)))
    differs = words[1:, 0] != words[:-1, 0]
    for w in range(1, words.shape[1]):
        differs |= words[1:, w] != words[:-1, w]
    return np.flatnonzero(np.concatenate(([True], differs)))


def _rank_order(
    codes: Int64Array, scores: NDArray[np.float64], docnos: NDArray[np.bytes_], blocks: _Blocks
) -> Int64Array | None:
    """Row order by query, then score descending, then docno descending (None: as they are)."""
    n_rows = len(codes)
    if n_rows == 0:
        return np.zeros(0, np.int64)
    ordered_codes = np.sort(blocks.codes)
    one_block_per_query = not np.any(ordered_codes[1:] == ordered_codes[:-1])
    if one_block_per_query and _ranked_within_blocks(scores, docnos, blocks.starts):
        # Most run files list each query's hits together and in rank order;
        # then only the blocks need putting in query order.
        return _rows_by_code(blocks, None)
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


def _ranked_within_blocks(
    scores: NDArray[np.float64], docnos: NDArray[np.bytes_], starts: Int64Array
) -> bool:
    """True when, inside each block, rows are in trec_eval's order."""
    last_of_block = starts[1:] - 1  # Row i and row i + 1 belong to different queries.
    worse_next = scores[:-1] < scores[1:]
    worse_next[last_of_block] = False
    if np.any(worse_next):
        return False
    tied_next = scores[:-1] == scores[1:]
    tied_next[last_of_block] = False
    tie = np.flatnonzero(tied_next)
    return bool(np.all(docnos[tie] > docnos[tie + 1]))


def _tied_with_a_neighbour(codes: Int64Array, scores: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Mask of sorted rows whose query and score equal those of the row before or after."""
    equal_next = (codes[1:] == codes[:-1]) & (scores[1:] == scores[:-1])
    tied = np.zeros(len(codes), dtype=bool)
    tied[:-1] |= equal_next
    tied[1:] |= equal_next
    return tied


def _words(docnos: NDArray, width: int) -> NDArray[np.uint64]:
    """The byte strings as (rows, width / 8) little-endian words, zero padded."""
    if docnos.itemsize == width:
        return np.ascontiguousarray(docnos).view("<u8").reshape(len(docnos), width // 8)
    # Copying raw bytes into a zeroed matrix is much cheaper than a string cast.
    padded = np.zeros((len(docnos), width), dtype=np.uint8)
    raw = np.ascontiguousarray(docnos).view(np.uint8).reshape(len(docnos), docnos.itemsize)
    padded[:, : docnos.itemsize] = raw
    return padded.view("<u8")


def _judged_pairs(
    qrels: TrecColumns,
    qrels_codes: Int64Array,
    run: TrecColumns,
    run_rows: Int64Array | None,
    run_codes: Int64Array,
    run_docnos: NDArray[np.bytes_],
) -> tuple[Int64Array, Int64Array]:
    """Each judged run row's qrels row, as (qrels rows, kept run rows), after the duplicate checks.

    ``run_rows`` are the kept rows of the run (None: all of them), and
    ``run_codes`` and ``run_docnos`` their query codes and docnos; the
    returned run rows count kept rows.

    Rows are numbered qrels first, then kept run rows; sorted by (query,
    hash of the docno, row), a judged run row comes right after its qrels
    row (see :func:`_sorted_rows`).
    """
    n_qrels = len(qrels_codes)
    width = 8 * max(1, -(-max(qrels.docnos.itemsize, run_docnos.itemsize) // 8))
    qrels_words, run_words = _words(qrels.docnos, width), _words(run_docnos, width)
    rows, keys = _sorted_rows([qrels_codes, run_codes], [qrels_words, run_words])
    at = np.flatnonzero(keys[1:] == keys[:-1])
    first, second = rows[at], rows[at + 1] - n_qrels
    # Usually every pair of equal keys is a qrels row and a run row of the same document.
    if np.all(first < n_qrels) and np.all(second >= 0):
        same = np.ones(len(at), dtype=bool)
        for w in range(width // 8):
            same &= qrels_words[first, w] == run_words[second, w]
        if np.all(same):
            return first, second
    # Otherwise a file lists a document twice, or different documents share
    # a hash: the general way, on both files' rows together.
    codes = np.concatenate((qrels_codes, run_codes))
    words = np.concatenate((qrels_words, run_words))
    first, second, classes = _equal_pairs(codes, words, rows, keys, at)
    if np.any(first >= n_qrels) or np.any(second < n_qrels):
        run_rows = np.arange(len(run_codes)) if run_rows is None else run_rows
        labels = classes()
        _check_unique(run, labels[n_qrels:], run_rows)
        _check_unique(qrels, labels[:n_qrels], np.arange(n_qrels))
    return first, second - n_qrels


def _sorted_rows(
    codes: list[Int64Array], words: list[NDArray[np.uint64]]
) -> tuple[Int64Array, NDArray[np.uint64]]:
    """Rows of the tables (codes, words) sorted by (code, hash of words, row), and their keys.

    Rows are numbered through the tables in turn. One sort of 64-bit keys
    does it: each key is the row's code in its high bits, then the hash,
    then the row number in its low bits. The returned keys hold the code and
    the hash: equal keys, same code and (unless hashes collide) same words.
    """
    n_rows = sum(len(c) for c in codes)
    if n_rows == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64)
    row_bits = max(1, (n_rows - 1).bit_length())
    code_bits = max(1, max(int(c.max(initial=0)) for c in codes).bit_length())
    keys = np.empty(n_rows, dtype=np.uint64)
    start = 0
    for table_codes, table_words in zip(codes, words, strict=True):
        part = keys[start : start + len(table_codes)]
        _hash(table_words, part)
        # The high bits of a product depend on every bit of the multiplicand,
        # so the hash is taken from there.
        part >>= np.uint64(min(63, code_bits + row_bits))
        part <<= np.uint64(row_bits)
        part |= table_codes.view(np.uint64) << np.uint64(64 - code_bits)
        start += len(table_codes)
    keys |= np.arange(n_rows, dtype=np.uint64)
    keys.sort()
    rows = (keys & np.uint64((1 << row_bits) - 1)).view(np.int64)
    keys >>= np.uint64(row_bits)
    return rows, keys


def _hash(words: NDArray[np.uint64], out: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """Write into ``out`` a 64-bit hash of each row of words, good in its high bits."""
    np.multiply(words[:, 0], _MIX2, out=out)
    for w in range(1, words.shape[1]):
        out ^= out >> np.uint64(31)
        out ^= words[:, w]
        out *= _MIX2
    return out


# Pairs of equal rows (earlier rows, later rows) and a function giving every row's class.
_EqualPairs = tuple[Int64Array, Int64Array, Callable[[], Int64Array]]


def _equal_pairs(
    codes: Int64Array,
    words: NDArray[np.uint64],
    rows: Int64Array,
    keys: NDArray[np.uint64],
    at: Int64Array,
) -> _EqualPairs:
    """Every pair of rows with equal (code, words), as (earlier rows, later rows).

    ``rows`` and ``keys`` come from :func:`_sorted_rows` and ``at`` holds the
    positions whose key equals the next one's. Rows equal to each other are
    listed as the chain of each one with the next. Also returns a function
    giving every row's class: equal rows, equal classes.
    """
    first, second = rows[at], rows[at + 1]
    same = np.ones(len(at), dtype=bool)
    for w in range(words.shape[1]):
        same &= words[first, w] == words[second, w]
    if np.all(same):
        return first, second, lambda: _classes(rows, keys)
    return _exact_pairs(codes, words, rows, keys, at[~same])


def _classes(rows: Int64Array, labels: NDArray) -> Int64Array:
    """Each row's class, given the rows in sorted order and their labels, equal ones together."""
    new = np.concatenate(([True], labels[1:] != labels[:-1]))
    classes = np.empty(len(rows), dtype=np.int64)
    classes[rows] = np.cumsum(new) - 1
    return classes


def _exact_pairs(
    codes: Int64Array,
    words: NDArray[np.uint64],
    rows: Int64Array,
    hashes: NDArray[np.uint64],
    mismatched: Int64Array,
) -> _EqualPairs:
    """:func:`_equal_pairs` when different rows share a hash.

    ``rows`` and ``hashes`` are sorted by hash, and ``mismatched`` holds the
    positions whose row differs from the next one's despite an equal hash.
    Only the rows of such hashes are told apart, by their bytes, with a
    dictionary: there are few of them.
    """
    group = np.cumsum(np.concatenate(([True], hashes[1:] != hashes[:-1]))) - 1
    mixed = np.zeros(int(group[-1]) + 1, dtype=bool)
    mixed[group[mismatched]] = True
    at = np.flatnonzero(mixed[group])
    mixed_rows = rows[at]
    size = words.shape[1] * 8
    names = words[mixed_rows].tobytes()
    labels: dict[tuple[int, bytes], int] = {}
    # Labels of mixed rows come after every group number, so that they
    # differ from the labels (group numbers) of the other rows.
    first_label = len(mixed)
    found = [
        labels.setdefault((code, names[i * size : (i + 1) * size]), first_label + len(labels))
        for i, code in enumerate(codes[mixed_rows].tolist())
    ]
    label = group.copy()
    # Within its own stretch of positions, each mixed group is ordered by
    # label, then row.
    order = np.lexsort((mixed_rows, np.array(found, dtype=np.int64), group[at]))
    rows = rows.copy()
    rows[at] = mixed_rows[order]
    label[at] = np.array(found, dtype=np.int64)[order]
    pairs = np.flatnonzero(label[1:] == label[:-1])
    return rows[pairs], rows[pairs + 1], lambda: _classes(rows, label)


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
