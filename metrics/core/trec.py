"""Reading TREC qrels and run files into column arrays, without a loop per line.

Formats (whitespace separated, as trec_eval reads them)
------------------------------------------------------
qrels: ``qid iter docno grade``, exactly 4 columns.
run: ``qid Q0 docno rank score tag``, at least 6 columns; later columns are
ignored, and so is the rank column (ranks come from the scores).

Blank lines and lines whose first field starts with ``#`` are skipped. Grades
and scores must be numbers (grades may be fractional or negative); a bad line
raises :class:`TrecFormatError` naming the file, the line and the problem.

A file is handled a few megabytes at a time, each piece as one byte array:
token boundaries, line numbers and the text of the needed columns come from
a few numpy passes over it, with no Python loop per line.
"""

import functools
import mmap
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from metrics.core.trec_tokens import (
    MAX_ID_BYTES,
    TrecFormatError,
    _chunk_columns,
    _chunk_end,
    _ChunkColumns,
    _Format,
    _padded_buffer,
    _regular_columns,
    _tokenize,
)

__all__ = ["MAX_ID_BYTES", "TrecColumns", "TrecFormatError", "parse_qrels", "parse_run"]
__all__ += ["LineRuns", "read_qrels", "read_run"]


@dataclass(frozen=True)
class TrecColumns:
    """The columns the evaluation needs from a qrels or run file.

    ``qids`` and ``docnos`` are fixed-width byte strings (``S`` dtype) compared
    byte by byte like C's ``strcmp``; ``values`` holds grades (qrels) or
    scores (run); ``lines`` holds each row's 1-based line number.

    Only error messages need line numbers, so the reader gives
    ``line_numbers`` as :class:`LineRuns`, and ``lines`` is worked out from
    them when first asked for; ``line_numbers`` may also be the array itself.
    """

    path: str
    qids: NDArray[np.bytes_]
    docnos: NDArray[np.bytes_]
    values: NDArray[np.float64]
    line_numbers: "NDArray[np.int64] | LineRuns"

    @functools.cached_property
    def lines(self) -> NDArray[np.int64]:
        """Each row's 1-based line number."""
        numbers = self.line_numbers
        return numbers.array() if isinstance(numbers, LineRuns) else numbers


class LineRuns:
    """The line numbers of a file's rows, kept as runs of rows on consecutive lines.

    Examples
    --------
    >>> runs = LineRuns()
    >>> runs.add(np.array([1, 2, 3]), 0)
    >>> runs.add(np.array([2, 5]), 10)
    >>> runs.array().tolist()
    [1, 2, 3, 12, 15]
    """

    def __init__(self) -> None:
        self.pieces: list[tuple[int, int] | NDArray[np.int64]] = []

    def add(self, lines: NDArray[np.int64], lines_before: int) -> None:
        """Add rows on the given lines of a piece of text that follows ``lines_before`` lines."""
        n_rows = len(lines)
        if n_rows and lines[-1] - lines[0] == n_rows - 1:
            self.pieces.append((n_rows, lines_before + int(lines[0])))
        elif n_rows:
            self.pieces.append(lines + lines_before)

    def array(self) -> NDArray[np.int64]:
        """Every row's line number."""
        arrays = [
            np.arange(piece[1], piece[1] + piece[0]) if isinstance(piece, tuple) else piece
            for piece in self.pieces
        ]
        return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)


def read_qrels(path: str | Path) -> TrecColumns:
    """Read a TREC qrels file (``qid iter docno grade``).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    qrels : TrecColumns
        ``values`` are the grades.

    Raises
    ------
    TrecFormatError
        On a line without exactly 4 columns or with a non-numeric grade.
    OSError
        When the file cannot be read.

    References
    ----------
    .. [1] trec_eval, ``get_qrels.c``.
    """
    return _read(Path(path), _QRELS)


def read_run(path: str | Path) -> TrecColumns:
    """Read a TREC run file (``qid Q0 docno rank score tag``).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    run : TrecColumns
        ``values`` are the scores.

    Raises
    ------
    TrecFormatError
        On a line with fewer than 6 columns or a non-numeric score.

    References
    ----------
    .. [1] trec_eval, ``get_trec_results.c``.
    """
    return _read(Path(path), _RUN)


def parse_qrels(data: bytes, path: str = "<qrels>") -> TrecColumns:
    """Parse qrels text; see :func:`read_qrels`.

    Examples
    --------
    >>> qrels = parse_qrels(b"301 0 DOC-1 2\\n\\n301 0 DOC-2 0.5\\n")
    >>> qrels.docnos.tolist(), qrels.values.tolist(), qrels.lines.tolist()
    ([b'DOC-1', b'DOC-2'], [2.0, 0.5], [1, 3])
    """
    return _parse(data, path, _QRELS)


def parse_run(data: bytes, path: str = "<run>") -> TrecColumns:
    """Parse run text; see :func:`read_run`.

    Examples
    --------
    >>> run = parse_run(b"301 Q0 DOC-1 1 2.5 tag\\n# comment\\n301 Q0 DOC-2 2 1e-3 tag x\\n")
    >>> run.qids.tolist(), run.values.tolist(), run.lines.tolist()
    ([b'301', b'301'], [2.5, 0.001], [1, 3])
    """
    return _parse(data, path, _RUN)


_QRELS = _Format("qid iter docno grade", 4, 4, 3, "grade")
_RUN = _Format("qid Q0 docno rank score tag", 6, None, 4, "score")


def _read(path: Path, form: _Format) -> TrecColumns:
    with path.open("rb") as stream:
        if os.fstat(stream.fileno()).st_size == 0:
            return _parse(b"", str(path), form)
        # Mapping the file lets it be handled chunk by chunk without reading
        # it all into memory first.
        with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return _parse(mapped, str(path), form)


def _parse(data: bytes | mmap.mmap, path: str, form: _Format) -> TrecColumns:
    """Parse the text a megabyte at a time, cut at line ends, on every processor.

    Chunks keep the many temporary arrays small enough to stay in the
    processor's caches, which makes the numpy passes several times faster
    than over a whole large file; and numpy lets other threads run while it
    works on an array, so chunks are parsed in parallel.
    """
    chunks, start = [], 0
    while start < len(data):
        end = _chunk_end(data, start)
        chunks.append((start, end))
        start = end

    def parse_chunk(bounds: tuple[int, int]) -> tuple[_ChunkColumns, int]:
        buffer = _padded_buffer(data, *bounds)
        regular = _regular_columns(buffer, bounds[1] - bounds[0], path, form)
        if regular is not None:
            return regular
        tokens = _tokenize(buffer)
        return _chunk_columns(tokens, path, form), tokens.n_newlines

    table, lines_before = _Table(len(data) // (2 * form.min_columns - 1) + 1), 0
    for parsed in _in_parallel(parse_chunk, chunks):
        try:
            columns, n_newlines = parsed()
        except TrecFormatError as error:
            # Chunks count lines from their own start.
            raise TrecFormatError(path, lines_before + error.line, error.problem) from None
        table.append(columns, lines_before)
        lines_before += n_newlines
    return table.columns(path)


class _Table:
    """The rows of a file's chunks, copied into place as each chunk is parsed.

    ``capacity`` must be at least the number of rows: every line with
    content takes a few bytes. Pages of the arrays past the last row are
    never written, so they cost no memory. Copying each chunk's columns as it
    comes, rather than all at the end, lets the next chunks reuse their
    memory.
    """

    def __init__(self, capacity: int) -> None:
        self.qids = np.zeros((capacity, 1), dtype="<u8")
        self.docnos = np.zeros((capacity, 1), dtype="<u8")
        self.values = np.empty(capacity)
        self.lines = LineRuns()
        self.n_rows = 0

    def append(self, columns: _ChunkColumns, lines_before: int) -> None:
        rows = slice(self.n_rows, self.n_rows + len(columns.values))
        self.qids = _widened(self.qids, columns.qids.shape[1], self.n_rows)
        self.docnos = _widened(self.docnos, columns.docnos.shape[1], self.n_rows)
        self.qids[rows, : columns.qids.shape[1]] = columns.qids
        self.docnos[rows, : columns.docnos.shape[1]] = columns.docnos
        self.values[rows] = columns.values
        self.lines.add(columns.lines, lines_before)
        self.n_rows = rows.stop

    def columns(self, path: str) -> TrecColumns:
        n_rows = self.n_rows
        return TrecColumns(
            path, _strings(self.qids[:n_rows]), _strings(self.docnos[:n_rows]),
            self.values[:n_rows], self.lines,
        )  # fmt: skip


def _widened(words: NDArray[np.uint64], n_words: int, n_rows: int) -> NDArray[np.uint64]:
    """``words``, or a copy of its first rows with zero words added up to ``n_words``."""
    if n_words <= words.shape[1]:
        return words
    wider = np.zeros((len(words), n_words), dtype=words.dtype)
    wider[:n_rows, : words.shape[1]] = words[:n_rows]
    return wider


def _strings(words: NDArray[np.uint64]) -> NDArray[np.bytes_]:
    """(rows, words) little-endian words as zero-padded byte strings, without copying."""
    return words.view(f"S{words.shape[1] * 8}").ravel()


def _in_parallel(function: Callable, items: list) -> Iterator[Callable]:
    """Start ``function`` on every item, on up to one thread per idle processor.

    Yields, in the items' order, a callable returning each result or
    raising its exception.
    """
    workers = min(len(items), _idle_processors())
    if workers <= 1:
        for item in items:
            yield functools.partial(function, item)
        return
    # Plain threads taking the items in turn: concurrent.futures would cost the
    # command 7 ms of imports (it loads asyncio's futures and the queue module).
    import threading

    results: list[Callable] = [_not_started] * len(items)
    done = [threading.Event() for _ in items]
    taken = iter(range(len(items)))
    lock, stop = threading.Lock(), threading.Event()

    def work() -> None:
        while not stop.is_set():
            with lock:
                index = next(taken, None)
            if index is None:
                return
            try:
                value = function(items[index])
                results[index] = lambda value=value: value
            except BaseException as error:  # Raised again, in order, by the caller.
                results[index] = functools.partial(_raise, error)
            done[index].set()

    threads = [threading.Thread(target=work, daemon=True) for _ in range(workers)]
    for thread in threads:
        thread.start()
    try:
        for index in range(len(items)):
            done[index].wait()
            # Handed over once: the caller's copy is all that keeps the result.
            yield results[index]
            results[index] = _not_started
    finally:
        # After an error, the chunks not yet started are not needed.
        stop.set()
        for thread in threads:
            thread.join()


def _not_started() -> None:
    raise RuntimeError("the chunk was not parsed")


def _raise(error: BaseException) -> None:
    raise error


def _idle_processors() -> int:
    """The processors this process may use, less those other threads are running on now.

    Threads only pay on idle processors: on busy ones, a thread holding
    Python's lock is often paused by the system while the other waits for
    the lock, and the file takes longer than on one thread. Linux tells how
    many threads are running right now, this one included, in
    ``/proc/loadavg``; elsewhere every processor counts as idle.
    """
    if hasattr(os, "sched_getaffinity"):
        processors = len(os.sched_getaffinity(0))
    else:
        processors = os.cpu_count() or 1
    try:
        with open("/proc/loadavg", encoding="ascii") as loadavg:
            running = int(loadavg.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return processors
    return max(1, min(processors, processors - running + 1))
