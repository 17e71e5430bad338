"""Reading CSV uploads: records by header, or many lines' columns at once as a block."""

import csv
import io
import re
from collections.abc import Iterator
from itertools import repeat
from typing import NamedTuple

from judgements.importers.reading import Lines, empty_file_errors
from judgements.importers.rows import LineError


def csv_records(lines: Lines, required: tuple[str, ...], *, lone_first_column=False, blocks=False):
    """Yield ``(line, {column: value})`` per data line of a CSV upload, or LineErrors.

    With ``blocks``, a block of lines that reads as one record per line, each with
    the header's columns (a blank line, or a lone first column where allowed, is left
    out), comes as one ``CsvBlock`` instead; the records are the same.
    """
    reader = csv.reader(lines)
    try:
        header = [name.strip().lower() for name in next(reader)]
    except StopIteration:
        yield from empty_file_errors(lines)
        return
    except csv.Error as error:
        yield LineError(1, None, f"The header is not valid CSV: {error}.")
        return
    # "text|query" in ``required`` means either name will do.
    missing = [name for name in required if not set(name.split("|")) & set(header)]
    if missing:
        needs, columns = ", ".join(missing).replace("|", " or "), ", ".join(header) or "none"
        if looks := looks_like(",".join(header)):
            yield LineError(1, None, f"This looks like {looks}, not CSV with {needs} columns.")
        else:
            yield LineError(1, None, f"The header needs {needs}; it has: {columns}.")
        return
    while not lines.at_end:
        if blocks and (block := _csv_block(lines, header, lone_first_column)):
            yield block
        else:
            yield from _csv_rows(lines, reader, header, lone_first_column, to_block_end=blocks)
    yield from lines.drain()


_QRELS_LINE = re.compile(r"^\S+\s+\S+\s+\S+\s+-?\d+(\.\d+)?$")
_RUN_LINE = re.compile(r"^\S+\s+Q0\s+\S+\s+\d+\s+\S+\s+\S+$", re.IGNORECASE)


def looks_like(first_line: str) -> str:
    """What a CSV upload's first line plainly is instead ("a JSON Lines file"), or ""."""
    text = first_line.strip()
    if text.startswith(("{", "[")):
        return "a JSON or JSON Lines file"
    if _RUN_LINE.match(text):
        return "a TREC run file (query id, Q0, doc id, rank, score, tag)"
    if _QRELS_LINE.match(text):
        return "a TREC qrels file (query id, iteration, doc id, grade)"
    if text.startswith("# qid:") or re.match(r"^-?\d+\s+qid:", text):
        return "a learning-to-rank (RankLib) file"
    return ""


class CsvBlock(NamedTuple):
    """Records of a CSV upload read at once: their line numbers and, by header name,
    their cells (as ``unguarded`` leaves them), in line order."""

    lines: range | list[int]
    columns: dict[str, list[str]]

    def records(self) -> Iterator[tuple[int, dict[str, str]]]:
        """``(line, {column: value})`` per record, as ``csv_records`` yields them."""
        names = list(self.columns)
        for line, cells in zip(self.lines, zip(*self.columns.values(), strict=True), strict=True):
            yield line, dict(zip(names, cells, strict=True))


def _csv_rows(lines: Lines, reader, header: list[str], lone_first_column: bool, to_block_end):
    """Records one at a time: to the end of the file, or, with ``to_block_end``, to the
    end of the block of lines where one ends."""
    while True:
        start = lines.number + 1
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            record = LineError(start, None, f"This is not valid CSV: {error}.")
        end = lines.number
        if _unclosed_quote(record, start, end, lines):
            record = LineError(start, None, "A quote opened on this line is never closed.")
        if lines.pending:
            yield from lines.drain()
        elif isinstance(record, LineError):
            yield record
        elif len(record) == len(header):
            yield start, dict(zip(header, map(unguarded, record), strict=True))
        elif record and not (lone_first_column and len(record) == 1):
            message = f"{len(record)} columns where the header has {len(header)}."
            yield LineError(start, None, message)
        if to_block_end and lines.block_done():
            return


def _csv_block(lines: Lines, header: list[str], lone_first_column: bool) -> CsvBlock | None:
    """The rest of the current block of ``lines`` as one CsvBlock, if each of its lines
    is a whole record that ``_csv_rows`` would yield, or leave out without a word;
    else None, and nothing is read."""
    text, first = lines.block(), lines.number + 1
    if not text:
        return None
    width = len(header)
    columns = _split_columns(text, width)
    if columns is not None:
        numbers: range | list[int] = range(first, first + len(columns[0]))
    elif (read := _read_columns(text, width, lone_first_column)) is not None:
        indexes, columns = read
        numbers = (
            range(first, first + len(indexes))
            if isinstance(indexes, range)
            else [first + index for index in indexes]
        )
    else:
        return None
    lines.skip_block(text)
    # Only a cell that starts with ' can be a guarded one.
    guarded = "'" in text
    return CsvBlock(
        numbers,
        {
            name: list(map(unguarded, cells)) if guarded else list(cells)
            for name, cells in zip(header, columns, strict=True)
        },
    )


def _split_columns(text: str, width: int) -> list[list[str]] | None:
    """The columns of ``text`` by splitting at commas, where the csv module would read
    the same: no quotes, no carriage returns but in line ends, no blank line, each
    line ``width`` fields, none longer than the csv module's limit; else None."""
    if '"' in text:
        return None
    if "\r" in text:
        if text.count("\r") != text.count("\r\n"):
            return None
        text = text.replace("\r\n", "\n")
    rows = text.removesuffix("\n").split("\n")
    if len(text) > csv.field_size_limit() and max(map(len, rows)) > csv.field_size_limit():
        return None
    if width == 1:
        return None if "" in rows or "," in text else [rows]
    if list(map(str.count, rows, repeat(","))).count(width - 1) != len(rows):
        return None
    del rows  # A block's cells are many small strings: one copy of them at a time.
    fields = text.removesuffix("\n").replace("\n", ",").split(",")
    return [fields[column::width] for column in range(width)]


def _read_columns(text: str, width: int, lone_first_column: bool):
    """``(indexes, columns)`` of the records of ``text`` as the csv module reads them,
    where each line is one record (its index among the lines), those without a cell
    or (where allowed) with a lone first cell left out; else None."""
    rows = io.StringIO(text).readlines()
    try:
        records = list(csv.reader(rows))
    except csv.Error:
        return None
    # A quote left open at the end of the block runs on to the next line.
    if len(records) != len(rows) or (records[-1] and records[-1][-1].endswith(("\n", "\r"))):
        return None
    sizes = list(map(len, records))
    if sizes.count(width) == len(sizes):
        return range(len(records)), list(zip(*records, strict=True))
    allowed = (width, 0, 1) if lone_first_column else (width, 0)
    if any(size not in allowed for size in sizes):
        return None
    indexes = [index for index, size in enumerate(sizes) if size == width]
    kept = [records[index] for index in indexes]
    return indexes, list(zip(*kept, strict=True)) if kept else [[] for _ in range(width)]


_GUARDED = re.compile(r"'+[-=+@\t\r]")


def unguarded(cell: str) -> str:
    """A CSV cell without the ' an export puts before a spreadsheet formula character."""
    return cell[1:] if cell[:1] == "'" and _GUARDED.match(cell) else cell


def _unclosed_quote(record, start: int, end: int, lines: Lines) -> bool:
    # The csv module reads an unclosed quote to the end of the file as one value.
    return (
        isinstance(record, list)
        and end > start
        and lines.at_end
        and bool(record)
        and record[-1].endswith(("\n", "\r"))
    )
