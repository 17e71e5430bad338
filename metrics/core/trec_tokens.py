"""The tokenizer behind :mod:`metrics.core.trec`: token boundaries, line numbers and the
needed columns of a piece of a qrels or run file, from a few numpy passes over its bytes
(no Python loop per line)."""

import mmap
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from metrics.core.decimals import parse_decimals, words_at

# Longest qid or docno accepted, in bytes; TREC identifiers are far shorter.
MAX_ID_BYTES = 256
_WORD = 8
_SPACE = 32  # Bytes up to and including the space character separate fields.
CHUNK_BYTES = 1 << 20  # Text handled per numpy pass; see _parse.
_MAX_REGULAR_COLUMNS = 64  # Lines with more columns go to the general tokenizer.
# _KEEP_LOW_BYTES[n] keeps the first n bytes of a little-endian 8-byte word.
_KEEP_LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(_WORD + 1)], dtype=np.uint64)


class TrecFormatError(ValueError):
    """A qrels or run file line that cannot be read; ``str()`` is the user message."""

    def __init__(self, path: str, line: int, problem: str) -> None:
        super().__init__(f"{path}, line {line}: {problem}")
        self.path, self.line, self.problem = path, line, problem


class _Tokens(NamedTuple):
    buffer: NDArray[np.uint8]
    starts: NDArray[np.int64]
    ends: NDArray[np.int64]
    first: NDArray[np.int64]  # Index of the first token of each content line.
    counts: NDArray[np.int64]  # Tokens on each content line.
    line_numbers: NDArray[np.int64]
    n_newlines: int  # Newlines in the text, not counting the two added around it.


class _Format(NamedTuple):
    columns: str
    min_columns: int
    max_columns: int | None
    value_column: int
    value_name: str


def _chunk_end(data: bytes | mmap.mmap, start: int) -> int:
    """End of the chunk starting at ``start``: just after a newline, or the end of the data."""
    limit = start + CHUNK_BYTES
    if limit >= len(data):
        return len(data)
    newline = data.rfind(b"\n", start, limit)
    if newline < 0:  # A line longer than a chunk: take it whole.
        newline = data.find(b"\n", limit)
    return len(data) if newline < 0 else newline + 1


class _ChunkColumns(NamedTuple):
    qids: NDArray[np.uint64]  # (rows, words), see _text_column.
    docnos: NDArray[np.uint64]
    values: NDArray[np.float64]
    lines: NDArray[np.int64]


def _chunk_columns(tokens: _Tokens, path: str, form: _Format) -> _ChunkColumns:
    wrong = tokens.counts < form.min_columns
    if form.max_columns is not None:
        wrong |= tokens.counts > form.max_columns
    bad = np.flatnonzero(wrong)
    if len(bad):
        found = tokens.counts[bad[0]]
        problem = f"expected {form.min_columns} columns ({form.columns}), found {found}"
        raise TrecFormatError(path, int(tokens.line_numbers[bad[0]]), problem)
    lines = tokens.line_numbers

    def bounds(column: int) -> _Bounds:
        return tokens.starts[tokens.first + column], tokens.ends[tokens.first + column]

    return _columns(tokens.buffer, bounds, path, form, lines)


_Bounds = tuple[NDArray[np.int64], NDArray[np.int64]]


def _columns(
    buffer: NDArray[np.uint8],
    bounds: Callable[[int], _Bounds],
    path: str,
    form: _Format,
    lines: NDArray[np.int64],
) -> _ChunkColumns:
    """The needed columns, given the bounds (starts, ends) of each column's tokens."""
    qids = _text_column(buffer, *bounds(0), path, "qid", lines)
    docnos = _text_column(buffer, *bounds(2), path, "docno", lines)
    values = _number_column(buffer, *bounds(form.value_column), path, form.value_name, lines)
    return _ChunkColumns(qids, docnos, values, lines)


def _regular_columns(
    buffer: NDArray[np.uint8], size: int, path: str, form: _Format
) -> tuple[_ChunkColumns, int] | None:
    """The columns of a chunk laid out as almost every file is, and its newlines; or None.

    The layout: every line has the same number of fields, each one blank
    byte from the next, with no blank or comment line. Then the blank bytes
    alone give every token's bounds, one pass cheaper than the general
    tokenizer, which handles every other chunk (and reports column errors).
    """
    stop = size + 1 if buffer[size] == ord("\n") else size + 2  # Through the last newline.
    text = buffer[:stop]
    blank = text <= _SPACE
    if size == 0 or np.any(blank[:-1] & blank[1:]):
        return None
    # Token i of the chunk runs from just after blank i to blank i + 1.
    blanks = np.flatnonzero(blank)
    newline_at = np.flatnonzero(buffer[blanks[1 : 1 + _MAX_REGULAR_COLUMNS + 1]] == 10)
    n_columns = int(newline_at[0]) + 1 if len(newline_at) else 0
    if not form.min_columns <= n_columns <= (form.max_columns or _MAX_REGULAR_COLUMNS):
        return None
    n_lines, rest = divmod(len(blanks) - 1, n_columns)
    if rest or np.count_nonzero(text == ord("\n")) != n_lines + 1:
        return None
    if not np.all(buffer[blanks[n_columns::n_columns]] == ord("\n")):
        return None

    def bounds(column: int) -> _Bounds:
        return blanks[column:-1:n_columns] + 1, blanks[column + 1 :: n_columns]

    if np.any(buffer[bounds(0)[0]] == ord("#")):
        return None
    lines = np.arange(1, n_lines + 1)
    n_newlines = n_lines if stop == size + 1 else n_lines - 1
    return _columns(buffer, bounds, path, form, lines), n_newlines


def _empty_buffer(size: int) -> NDArray[np.uint8]:
    """A buffer for ``size`` bytes of text between two newlines, plus zero padding.

    The newlines make the first and last lines like any other; the padding
    lets every token be read as whole 8-byte words without running past the
    end.
    """
    buffer = np.empty(size + 2 + MAX_ID_BYTES + _WORD, dtype=np.uint8)
    buffer[0] = buffer[size + 1] = ord("\n")
    buffer[size + 2 :] = 0
    return buffer


def _padded_buffer(data: bytes | mmap.mmap, start: int, end: int) -> NDArray[np.uint8]:
    """Copy ``data[start:end]`` into a padded buffer (see :func:`_empty_buffer`)."""
    buffer = _empty_buffer(end - start)
    # A view of the file's bytes, copied once; slicing the mapping would copy twice.
    view = np.frombuffer(data, dtype=np.uint8, count=end - start, offset=start)
    buffer[1 : end - start + 1] = view
    del view  # An open view would keep the mapping from being closed.
    return buffer


def _tokenize(buffer: NDArray[np.uint8]) -> _Tokens:
    """Find every token and the content lines they sit on, in a few array passes."""
    text = buffer[: len(buffer) - MAX_ID_BYTES - _WORD]
    space = text <= _SPACE
    # starts_here[i] is True when a token starts at byte i + 1.
    starts_here = space[:-1] > space[1:]
    starts = np.flatnonzero(starts_here) + 1
    ends = np.flatnonzero(space[1:] > space[:-1]) + 1
    newlines = np.flatnonzero(text == ord("\n"))
    # Tokens of line j start between newline j and newline j + 1. Summing the
    # flags as bytes into 32-bit totals is much faster than a sum of booleans.
    counts = np.add.reduceat(starts_here.view(np.uint8), newlines[:-1], dtype=np.int32)
    counts = counts.astype(np.int64)
    first = np.cumsum(counts) - counts
    has_tokens = counts > 0
    content = has_tokens.copy()
    content[has_tokens] = buffer[starts[first[has_tokens]]] != ord("#")
    line_numbers = np.flatnonzero(content) + 1
    return _Tokens(
        buffer, starts, ends, first[content], counts[content], line_numbers, len(newlines) - 2
    )


def _text_column(
    buffer: NDArray[np.uint8],
    starts: NDArray[np.int64],
    ends: NDArray[np.int64],
    path: str,
    name: str,
    lines: NDArray,
) -> NDArray[np.uint64]:
    """Return the given tokens' bytes as (rows, words) little-endian 8-byte words.

    Viewed as ``S`` with the width of the row, the matrix holds the tokens as
    zero-padded byte strings.
    """
    lengths = ends - starts
    longest = int(lengths.max(initial=1))
    if longest > MAX_ID_BYTES:
        row = int(np.argmax(lengths > MAX_ID_BYTES))
        problem = f"{name} longer than {MAX_ID_BYTES} bytes"
        raise TrecFormatError(path, int(lines[row]), problem)
    n_words = max(1, -(-longest // _WORD))
    if n_words == 1:
        return (words_at(buffer, starts) & _KEEP_LOW_BYTES[lengths]).reshape(-1, 1)
    words = words_at(buffer, starts, n_words)
    for w in range(n_words):
        words[:, w] &= _KEEP_LOW_BYTES[np.clip(lengths - w * _WORD, 0, _WORD)]
    return words


def _number_column(
    buffer: NDArray[np.uint8],
    starts: NDArray[np.int64],
    ends: NDArray[np.int64],
    path: str,
    name: str,
    lines: NDArray,
) -> NDArray[np.float64]:
    if len(starts) and ends[0] - starts[0] == 1:
        # Grades are mostly one digit; reading them directly is cheaper still.
        digits = buffer[starts] - np.uint8(ord("0"))
        if np.all(digits < 10) and np.all(ends - starts == 1):
            return digits.astype(np.float64)
    values, parsed = parse_decimals(buffer, starts, ends)
    if np.all(parsed):
        return values
    # Exponents, signs, long digit strings and mistakes take the slow, general way.
    slow = np.flatnonzero(~parsed)
    words = _text_column(buffer, starts[slow], ends[slow], path, name, lines[slow])
    # Parsing is faster on strings no wider than the longest token.
    width = max(1, int((ends[slow] - starts[slow]).max(initial=1)))
    chars = words.view(np.uint8).reshape(len(words), -1)[:, :width]
    text = np.ascontiguousarray(chars).view(f"S{width}").ravel()
    values[slow] = _numbers(text)
    bad = np.flatnonzero(np.isnan(values[slow]))
    # "nan" itself parses, but no score or grade may be NaN: it cannot be ranked.
    if len(bad):
        row = int(bad[0])
        problem = f"{name} {text[row].decode(errors='replace')!r} is not a number"
        raise TrecFormatError(path, int(lines[slow[row]]), problem)
    return values


def _numbers(text: NDArray[np.bytes_]) -> NDArray[np.float64]:
    """Parse any number Python accepts; NaN marks a token that is not one."""
    try:
        return text.astype(np.float64)
    except ValueError:
        return np.array([_float_or_nan(t) for t in text.tolist()])


def _float_or_nan(text: bytes) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")
