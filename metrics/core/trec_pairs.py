"""Which run row is which qrels row: (query, docno) pairs of a qrels file and a run.

Each judged run row is matched to its qrels row, and a document listed twice
for one query, in either file, is found and named as trec_eval names it.

How it stays fast: every (query, docno) pair of both files is hashed to 64
bits and the hashes sorted once, with each row's number in their low bits
(one plain sort of integers, far cheaper than sorting strings or an
argsort), so that a judged run row lands next to its qrels row and a row
listed twice next to its twin. Neighbours with equal hashes are then
compared byte for byte, so a hash shared by two different pairs costs time,
never a wrong match.
"""

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from metrics.core.segments import Int64Array
from metrics.core.trec import TrecColumns, TrecFormatError

_MIX2 = np.uint64(0xBF58476D1CE4E5B9)  # An odd constant of the splitmix64 mixer.
KEY_BLOCK = 1 << 16  # Rows whose keys are made, or compared, at a time.
# A table's query codes as runs of consecutive rows sharing one: (first rows,
# lengths, codes), the first rows rising from 0 and the runs covering every row.
CodeRuns = tuple[Int64Array, Int64Array, Int64Array]


def judged_pairs(
    qrels: TrecColumns,
    qrels_codes: CodeRuns,
    run: TrecColumns,
    run_rows: Int64Array | None,
    run_codes: CodeRuns,
    run_docnos: NDArray[np.bytes_],
) -> tuple[Int64Array, Int64Array]:
    """Each judged run row's qrels row, as (qrels rows, kept run rows), after the duplicate checks.

    ``run_rows`` are the kept rows of the run (None: all of them), and
    ``run_codes`` and ``run_docnos`` their query codes and docnos; the
    returned run rows count kept rows. Query codes come as runs of rows
    (see :data:`CodeRuns`).

    Rows are numbered qrels first, then kept run rows; sorted by (query,
    hash of the docno, row), a judged run row comes right after its qrels
    row (see :func:`_sorted_keys`).
    """
    n_qrels = len(qrels.docnos)
    width = 8 * max(1, -(-max(qrels.docnos.itemsize, run_docnos.itemsize) // 8))
    qrels_words, run_words = as_words(qrels.docnos, width), as_words(run_docnos, width)
    keys, row_bits = _sorted_keys([qrels_codes, run_codes], [qrels_words, run_words])
    at = _equal_neighbours(keys, row_bits)
    row_mask = np.uint64((1 << row_bits) - 1)
    first = (keys[at] & row_mask).view(np.int64)
    second = (keys[at + 1] & row_mask).view(np.int64) - n_qrels
    # Usually every pair of equal keys is a qrels row and a run row of the same document.
    if np.all(first < n_qrels) and np.all(second >= 0):
        same = np.ones(len(at), dtype=bool)
        for w in range(width // 8):
            same &= qrels_words[first, w] == run_words[second, w]
        if np.all(same):
            return first, second
    # Otherwise a file lists a document twice, or different documents share
    # a hash: the general way, on both files' rows together.
    codes = np.concatenate([np.repeat(runs[2], runs[1]) for runs in (qrels_codes, run_codes)])
    words = np.concatenate((qrels_words, run_words))
    rows = (keys & row_mask).view(np.int64)
    keys >>= np.uint64(row_bits)
    first, second, classes = _equal_pairs(codes, words, rows, keys, at)
    if np.any(first >= n_qrels) or np.any(second < n_qrels):
        run_rows = np.arange(len(run_docnos)) if run_rows is None else run_rows
        labels = classes()
        _check_unique(run, labels[n_qrels:], run_rows)
        _check_unique(qrels, labels[:n_qrels], np.arange(n_qrels))
    return first, second - n_qrels


def _sorted_keys(
    codes: list[CodeRuns], words: list[NDArray[np.uint64]]
) -> tuple[NDArray[np.uint64], int]:
    """Keys of the tables' rows (code, hash of words, row number), sorted; and the row bits.

    Rows are numbered through the tables in turn. One sort of 64-bit keys
    does it: each key is the row's code in its high bits, then the hash,
    then the row number in its lowest ``row_bits`` bits. Equal keys without
    their row bits: same code and (unless hashes collide) same words.

    The keys are made ``KEY_BLOCK`` rows at a time, so that the
    intermediate values stay in the processor's caches and take no memory
    of their own.
    """
    n_rows = sum(len(w) for w in words)
    row_bits = max(1, (n_rows - 1).bit_length())
    if n_rows == 0:
        return np.zeros(0, np.uint64), row_bits
    code_bits = max(1, max(int(runs[2].max(initial=0)) for runs in codes).bit_length())
    # The high bits of a product depend on every bit of the multiplicand,
    # so the hash is taken from there.
    hash_shift = np.uint64(min(63, code_bits + row_bits))
    code_shift, row_shift = np.uint64(64 - code_bits), np.uint64(row_bits)
    keys = np.empty(n_rows, dtype=np.uint64)
    numbers = np.arange(min(KEY_BLOCK, n_rows), dtype=np.uint64)
    scratch = np.empty_like(numbers)
    start = 0
    for table_codes, table_words in zip(codes, words, strict=True):
        for lo in range(0, len(table_words), KEY_BLOCK):
            hi = min(lo + KEY_BLOCK, len(table_words))
            part, extra = keys[start + lo : start + hi], scratch[: hi - lo]
            _hash(table_words[lo:hi], part)
            part >>= hash_shift
            part <<= row_shift
            block_codes = _codes_between(table_codes, lo, hi)
            np.left_shift(block_codes.view(np.uint64), code_shift, out=extra)
            part |= extra
            np.add(numbers[: hi - lo], np.uint64(start + lo), out=extra)
            part |= extra
        start += len(table_words)
    keys.sort()
    return keys, row_bits


def _codes_between(runs: CodeRuns, lo: int, hi: int) -> Int64Array:
    """The codes of rows ``lo`` to ``hi`` (excluded), from the runs of rows sharing a code.

    Examples
    --------
    >>> runs = (np.array([0, 2, 5]), np.array([2, 3, 1]), np.array([7, 8, 9]))
    >>> _codes_between(runs, 1, 6).tolist()
    [7, 8, 8, 8, 9]
    """
    starts, lengths, codes = runs
    first = int(np.searchsorted(starts, lo, side="right")) - 1
    last = int(np.searchsorted(starts, hi, side="left"))
    run_starts = starts[first:last]
    counts = np.minimum(run_starts + lengths[first:last], hi) - np.maximum(run_starts, lo)
    return np.repeat(codes[first:last], counts)


def _equal_neighbours(keys: NDArray[np.uint64], row_bits: int) -> Int64Array:
    """Positions whose key, row bits aside, equals the next one's (``KEY_BLOCK`` at a time)."""
    found = [np.zeros(0, dtype=np.int64)]
    row_shift = np.uint64(row_bits)
    for lo in range(0, len(keys) - 1, KEY_BLOCK):
        hi = min(lo + KEY_BLOCK, len(keys) - 1)
        differ = keys[lo:hi] ^ keys[lo + 1 : hi + 1]
        differ >>= row_shift
        found.append(np.flatnonzero(differ == 0) + lo)
    return np.concatenate(found)


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

    ``rows`` and ``keys`` come from :func:`_sorted_keys` and ``at`` holds the
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


def as_words(docnos: NDArray, width: int) -> NDArray[np.uint64]:
    """The byte strings as (rows, width / 8) little-endian words, zero padded."""
    if docnos.itemsize == width:
        return np.ascontiguousarray(docnos).view("<u8").reshape(len(docnos), width // 8)
    # Copying raw bytes into a zeroed matrix is much cheaper than a string cast.
    padded = np.zeros((len(docnos), width), dtype=np.uint8)
    raw = np.ascontiguousarray(docnos).view(np.uint8).reshape(len(docnos), docnos.itemsize)
    padded[:, : docnos.itemsize] = raw
    return padded.view("<u8")
