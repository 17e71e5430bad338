"""Reading uploads: lines, CSV records, JSON with line numbers, and errors that name them."""

import csv
import io
import json
import json.decoder
import json.scanner
import re
import tempfile
import zipfile
from array import array
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from itertools import repeat
from operator import length_hint
from typing import NamedTuple

import ijson
import numpy as np

from judgements.importers.rows import LineError

MAX_LINE_BYTES = 1 << 20
MAX_JSON_BYTES = 32 << 20


class _Problem(NamedTuple):
    """Stands for a line that cannot be read; ``message`` says why."""

    message: str


class Lines:
    """An upload's text lines with their line ends, numbered from 1.

    The upload is read a block of whole lines at a time. A block is decoded at once,
    which is several times faster than line by line; only a block that fails is
    decoded again line by line to find the culprit. A line that is not UTF-8 or is
    longer than ``MAX_LINE_BYTES`` comes out as a bare line end, and its error waits
    in ``pending`` for the parser to report before it skips the line.

    Iterating gives one line at a time. A parser may instead take the rest of the
    current block whole (``block``, then ``skip_block``) when none of its lines has
    a problem, and read it with a few calls instead of one per line.
    """

    def __init__(self, chunks: Iterable[bytes]):
        self.chunks, self.number, self.pending, self.at_end = iter(chunks), 0, [], False
        self._runs = self._decoded()
        # The current block: its lines not read yet, as an iterator that ``block`` and
        # the reading line by line share, or, before any line of it is read, its text
        # alone (split into lines only if it is read line by line).
        self._rest: Iterator = iter(())
        self._text, self._clean = None, True

    def __iter__(self) -> Iterator[str]:
        while True:
            rest = self._rest
            for line in rest:
                self.number += 1
                if line.__class__ is not str:
                    self._fail(line.message)
                    line = "\n"
                yield line
            # Unless ``block`` put the lines it looked at back, or a block of its own.
            if rest is self._rest and not self._load():
                break
        self.at_end = True

    def block(self) -> str | None:
        """The lines not read yet of the current block (else of the next) as one text,
        if none of them has a problem; None if one has, or at the end."""
        if length_hint(self._rest):
            lines = list(self._rest)
            self._rest = iter(lines)
            return "".join(lines) if self._clean else None
        if self._text is None:
            run = next(self._runs, None)
            if isinstance(run, list):
                self._rest, self._clean = iter(run), False
            else:
                self._text = run
        return self._text

    def skip_block(self, text: str) -> None:
        """Count ``text``, the lines ``block`` gave, as read."""
        self.number += text.count("\n") + (not text.endswith("\n"))
        self._rest, self._text = iter(()), None

    def block_done(self) -> bool:
        """Whether every line of the current block has been read."""
        return not length_hint(self._rest) and self._text is None

    def _load(self) -> bool:
        run = self._text if self._text is not None else next(self._runs, None)
        self._text = None
        if run is None:
            return False
        self._clean = isinstance(run, str)
        self._rest = iter(io.StringIO(run).readlines() if self._clean else run)
        return True

    def _decoded(self) -> Iterator[str | list]:
        """Each block: its text when every line reads, else its lines, a ``_Problem``
        standing for each line that does not."""
        first = True
        for block in self._blocks():
            if block is None:
                yield [_Problem(f"The line is longer than {MAX_LINE_BYTES >> 10} KB.")]
                continue
            try:
                text = block.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            # PostgreSQL cannot store NUL characters: such lines are refused here too.
            if text is None or "\x00" in text:
                yield list(self._line_by_line(block))
            elif len(text) <= MAX_LINE_BYTES:
                yield text.removeprefix("\ufeff") if first else text
            else:
                yield self._checked(text.removeprefix("\ufeff") if first else text)
            first = False

    @staticmethod
    def _checked(text: str) -> str | list:
        lines = io.StringIO(text).readlines()
        if max(map(len, lines)) <= MAX_LINE_BYTES:
            return text
        message = f"The line is longer than {MAX_LINE_BYTES >> 10} KB."
        return [_Problem(message) if len(line) > MAX_LINE_BYTES else line for line in lines]

    @staticmethod
    def _line_by_line(block: bytes) -> Iterator[str | _Problem]:
        for raw in io.BytesIO(block):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                byte, column = raw[error.start], error.start + 1
                message = f"Byte 0x{byte:02x} at column {column} is not UTF-8; save as UTF-8."
                yield _Problem(message)
                continue
            yield _Problem("The line contains a NUL character.") if "\x00" in line else line

    def _fail(self, message: str) -> None:
        self.pending.append(LineError(self.number, None, message))

    def drain(self) -> list[LineError]:
        errors, self.pending = self.pending, []
        return errors

    def _blocks(self) -> Iterator[bytes | None]:
        """Runs of whole lines; None stands for one line too long to keep."""
        rest, overlong = b"", False
        for number, chunk in enumerate(self.chunks):
            if number == 0 and (problem := _binary_problem(chunk)):
                self.pending.append(problem)
                return
            end = chunk.rfind(b"\n") + 1
            if end and overlong:
                first = chunk.find(b"\n") + 1
                yield None
                chunk, end, overlong = chunk[first:], end - first, False
            if end:
                yield rest + chunk[:end]
                rest = chunk[end:]
            elif not overlong:
                rest += chunk
            if len(rest) > MAX_LINE_BYTES:
                rest, overlong = b"", True
        if rest or overlong:
            yield None if overlong else rest


def _binary_problem(head: bytes) -> LineError | None:
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return LineError(None, None, "The file is UTF-16; save it as UTF-8.")
    if (nul := head.find(b"\x00")) >= 0:
        line = head.count(b"\n", 0, nul) + 1
        return LineError(line, None, "A NUL byte: this is not a text file.")
    return None


def empty_file_errors(lines: Lines) -> list[LineError]:
    return lines.drain() or [LineError(None, None, "The file is empty.")]


class Duplicates:
    """Remembers a 64-bit key per row (12 bytes a row) and reports repeats at the end."""

    def __init__(self, field_name: str, what: str):
        # Arrays of int64, not lists of Python ints (which cost about 70 bytes a row).
        self.field, self.what, self.keys, self.lines = field_name, what, array("q"), array("q")

    def add(self, key, line: int) -> None:
        self.keys.append(key if isinstance(key, int) else hash(key))
        self.lines.append(line)

    def extend(self, keys: np.ndarray, lines: np.ndarray) -> None:
        """``add`` for many rows at once: their 64-bit keys (hashes) and lines."""
        self.keys.frombytes(np.asarray(keys, np.int64).tobytes())
        self.lines.frombytes(np.asarray(lines, np.int64).tobytes())

    def errors(self) -> Iterator[LineError]:
        if not self.keys:
            return
        keys, lines = np.frombuffer(self.keys, np.int64), np.frombuffer(self.lines, np.int64)
        order = np.lexsort((lines, keys))
        keys, lines = keys[order], lines[order]
        starts = np.r_[True, keys[1:] != keys[:-1]]
        first = lines[starts][np.cumsum(starts) - 1]
        repeated = np.flatnonzero(~starts)
        for index in repeated[np.argsort(lines[repeated], kind="stable")]:
            line, original = int(lines[index]), int(first[index])
            yield LineError(line, self.field, f"{self.what} repeats line {original}.")


def grade_of(text, grades: frozenset[int]) -> tuple[int | None, str | None]:
    """The grade in ``text`` if it is a whole number on the scale, else an error message."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        return None, f"must be a number, not {_kind_of(text)}."
    return _grade_of(text, grades)


def _kind_of(value) -> str:
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else "true or false"


@lru_cache(maxsize=4096)
def _grade_of(text, grades: frozenset[int]) -> tuple[int | None, str | None]:
    # Cached: a file repeats a handful of grade spellings a million times.
    value = str(text).strip()
    if not value:
        return None, "is empty."
    number = ascii_number(value)
    if number is None:
        return None, f'"{value}" is not a number (digits 0-9 only).'
    if not number.is_integer():
        return None, f'"{value}" is not a whole number.'
    if int(number) not in grades:
        return None, f'"{value}" is outside the scale {scale_text(grades)}.'
    return int(number), None


def ascii_number(text: str) -> float | None:
    """``float(text)`` for text in ASCII digits; Python also reads Arabic-Indic or
    full-width digits, which no other tool of the chain does."""
    if not text.isascii():
        return None
    try:
        return float(text)
    except ValueError:
        return None


def scale_text(grades: Iterable[int]) -> str:
    values = sorted(grades)
    if values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}-{values[-1]}"
    return ", ".join(map(str, values))


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
        yield LineError(1, None, f"The header needs {needs}; it has: {columns}.")
        return
    while not lines.at_end:
        if blocks and (block := _csv_block(lines, header, lone_first_column)):
            yield block
        else:
            yield from _csv_rows(lines, reader, header, lone_first_column, to_block_end=blocks)
    yield from lines.drain()


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


def nonblank_lines(lines: Lines, *, blocks=False) -> Iterator:
    """Yield ``(line, text)`` for every line that is not blank, or LineErrors.

    With ``blocks``, a block of lines without a problem comes as one LineBlock.
    """
    seen, one_by_one = False, iter(lines)
    while True:
        if blocks and (text := lines.block()) is not None:
            first = lines.number + 1
            lines.skip_block(text)
            if text.strip():
                seen = True
                yield LineBlock(first, text)
            continue
        for text in one_by_one:
            if problems := lines.drain():
                seen = True
                yield from problems
            elif text.strip():
                seen = True
                yield lines.number, text
            if blocks and lines.block_done():
                break
        else:
            break
    yield from lines.drain() if seen else empty_file_errors(lines)


class LineBlock(NamedTuple):
    """Lines of an upload read at once: their text, the first of them line ``first``."""

    first: int
    text: str

    def items(self) -> Iterator[tuple[int, str]]:
        """``(line, text)`` per line not blank, as ``nonblank_lines`` yields them."""
        for number, text in enumerate(io.StringIO(self.text), start=self.first):
            if text.strip():
                yield number, text

    def columns(self, width: int) -> list[list[str]] | None:
        """Each line's whitespace-separated fields as ``width`` columns, where every
        line is ASCII with ``width`` fields one space or tab apart (str.split's reading
        of it); else None."""
        text = self.text
        if not text.isascii() or any(space in text for space in "\x0b\x0c\x1c\x1d\x1e\x1f"):
            return None
        if "\r" in text:
            if text.count("\r") != text.count("\r\n"):
                return None
            text = text.replace("\r\n", "\n")
        text = text.removesuffix("\n").replace("\t", " ")
        if "  " in text or " \n" in text or "\n " in text or text[:1] == " " or text[-1:] == " ":
            return None
        rows = text.split("\n")
        if list(map(str.count, rows, repeat(" "))).count(width - 1) != len(rows):
            return None
        del rows  # A block's fields are many small strings: one copy of them at a time.
        fields = text.replace("\n", " ").split(" ")
        return [fields[column::width] for column in range(width)]


ZIP_MAGIC = b"PK\x03\x04"


def unzipped(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The chunks, or, for a ZIP archive, those of its first member, read as they come.

    A ZIP's directory is at its end, so the archive is spooled to a temporary file
    (on disk past a few megabytes) first. A broken archive raises ``Unreadable``.
    """
    chunks = iter(chunks)
    first = next(chunks, b"")
    if not first.startswith(ZIP_MAGIC):
        yield first
        yield from chunks
        return
    with tempfile.SpooledTemporaryFile(max_size=8 << 20) as spool:
        spool.write(first)
        for chunk in chunks:
            spool.write(chunk)
        try:
            with zipfile.ZipFile(spool) as archive, archive.open(archive.namelist()[0]) as member:
                yield from iter(lambda: member.read(1 << 20), b"")
        except (zipfile.BadZipFile, IndexError, OSError) as error:
            raise Unreadable(f"The ZIP archive cannot be read ({error}).") from None


class Unreadable(ValueError):
    """An upload that cannot be read at all; the message says why."""


class LineDict(dict):
    """A JSON object that remembers the line it starts on."""

    line = 0


MAX_JSON_DEPTH = 64


class JsonValue(NamedTuple):
    """A value found at a wanted place of a JSON upload, built whole."""

    prefix: str  # where it is, as ijson names it: "query_groups.item"
    key: str  # its key in the enclosing object, or "item" in a list
    line: int
    value: object


def json_values(
    chunks: Iterable[bytes],
    wanted: Callable[[str], bool],
    shapes: dict[str, type] | None = None,
    *,
    multiple_values: bool = False,
) -> Iterator[JsonValue | LineError]:
    """Stream a JSON upload, building only the values at places ``wanted`` accepts.

    The upload is parsed incrementally (ijson's C parser, fed at most one line at a
    time so that every object knows the line it starts on), so memory holds one
    wanted value at a time however large the file. ``shapes`` names places whose
    value must be of a type (``{"query_groups": list}``); another type there is an
    error naming the place. Objects inside built values are ``LineDict``s. With
    ``multiple_values``, the upload may hold several JSON values one after another.
    """
    reader, builder, path = _LineReader(chunks), _Builder(), []
    try:
        events = ijson.basic_parse(reader, use_float=True, multiple_values=multiple_values)
        for event, value in events:
            if event == "map_key":
                path[-1] = value
                if builder.active:
                    builder.keys[-1] = value
                continue
            if event in ("end_map", "end_array"):
                path.pop()
                if builder.active and (done := builder.end()):
                    yield done
                continue
            if not builder.active:
                prefix = ".".join(path)
                if problem := _shape_problem(shapes or {}, prefix, event, reader.line):
                    yield problem
                elif wanted(prefix):
                    builder.begin(prefix, path[-1] if path else "", reader.line)
            if builder.active and (done := builder.add(event, value, reader.line)):
                yield done
            if event in ("start_map", "start_array"):
                path.append("item" if event == "start_array" else "")
                if len(path) > MAX_JSON_DEPTH:
                    message = f"The JSON nests deeper than {MAX_JSON_DEPTH} levels."
                    yield LineError(reader.line, None, message)
                    return
    except ijson.JSONError as error:
        if reader.problems and reader.problems[0].line is not None:
            yield reader.problems[0]
        else:
            yield LineError(
                reader.line if not reader.problems else None, None, _problem(error, reader)
            )
        return
    except Unreadable as error:
        yield LineError(None, None, str(error))
        return
    except (ValueError, RecursionError, OverflowError) as error:
        yield LineError(reader.line, None, f"This is not valid JSON: {error}.")
        return
    yield from reader.problems


def _shape_problem(shapes: dict, prefix: str, event: str, line: int) -> LineError | None:
    expected = shapes.get(prefix)
    if expected is None or _EVENT_TYPES[event][1] is expected:
        return None
    wanted = "an object" if expected is dict else "a list"
    return LineError(line, prefix, f"must be {wanted}, not {_EVENT_TYPES[event][0]}.")


_EVENT_TYPES = {
    "start_map": ("an object", dict),
    "start_array": ("a list", list),
    "number": ("a number", float),
    "string": ("a string", str),
    "boolean": ("true or false", bool),
    "null": ("null", None),
}


def _problem(error: Exception, reader: "_LineReader") -> str:
    if reader.problems:
        return reader.problems[0].message
    if reader.empty:
        return "The file is empty."
    lines = str(error).strip().splitlines()
    first = lines[0] if lines else "the file ends too early"
    if "integer overflow" in first:
        return "A whole number is too large (over 18 digits); write it as a string."
    return f"This is not valid JSON: {first}."


class _Builder:
    """Builds one JSON value from ijson's events; objects become LineDicts."""

    def __init__(self):
        self.active, self.stack, self.keys = False, [], []

    def begin(self, prefix: str, key: str, line: int) -> None:
        self.active, self.prefix, self.key, self.line = True, prefix, key, line
        self.stack, self.keys, self.result = [], [], None

    def add(self, event: str, value, line: int) -> JsonValue | None:
        if event not in ("start_map", "start_array"):
            self._put(value)
            return None if self.stack else self._finished()
        container = LineDict() if event == "start_map" else []
        if event == "start_map":
            container.line = line
        self._put(container)
        self.stack.append(container)
        self.keys.append(None)
        return None

    def end(self) -> JsonValue | None:
        self.stack.pop()
        self.keys.pop()
        return None if self.stack else self._finished()

    def _put(self, value) -> None:
        if not self.stack:
            self.result = value
        elif isinstance(self.stack[-1], list):
            self.stack[-1].append(value)
        else:
            self.stack[-1][self.keys[-1]] = value

    def _finished(self) -> JsonValue:
        self.active = False
        return JsonValue(self.prefix, self.key, self.line, self.result)


class _LineReader:
    """A file for ijson that hands over at most one line (and 64 KB) per read.

    ijson parses each piece as it comes, so the line of the piece being parsed is the
    line of the events it produces. Refuses files over ``MAX_JSON_BYTES``, UTF-16 and
    binary files; a BOM is dropped.
    """

    PIECE = 1 << 16

    def __init__(self, chunks: Iterable[bytes]):
        self.chunks, self.buffer, self.offset = iter(chunks), b"", 0
        self.line, self.new_line, self.read_bytes, self.empty = 1, False, 0, True
        self.problems: list[LineError] = []
        self.high_surrogate = False

    def read(self, size: int = -1) -> bytes:
        if size == 0 or self.problems:
            return b""
        if self.offset >= len(self.buffer) and not self._fill():
            return b""
        if self.new_line:
            self.line += 1
        end = self.buffer.find(b"\n", self.offset, self.offset + self.PIECE)
        end = min(len(self.buffer), self.offset + self.PIECE) if end < 0 else end + 1
        piece, self.offset = self.buffer[self.offset : end], end
        if b"\\u" in piece or self.high_surrogate:
            lone = lone_surrogate(piece, self.high_surrogate)
            if lone:
                self.problems.append(LineError(self.line, None, SURROGATE))
                return b""
            self.high_surrogate = lone is None
        self.new_line = piece.endswith(b"\n")
        self.empty = self.empty and not piece.strip()
        return piece

    def _fill(self) -> bool:
        for chunk in self.chunks:
            if not self.read_bytes:
                if problem := _binary_problem(chunk):
                    self.problems.append(problem)
                    return False
                chunk = chunk.removeprefix(b"\xef\xbb\xbf")
            self.read_bytes += len(chunk)
            if self.read_bytes > MAX_JSON_BYTES:
                limit = MAX_JSON_BYTES >> 20
                message = f"JSON files over {limit} MB are not accepted."
                self.problems.append(LineError(None, None, message))
                return False
            if (nul := chunk.find(b"\x00")) >= 0:
                line = (
                    self.line + self.buffer.count(b"\n", self.offset) + chunk.count(b"\n", 0, nul)
                )
                self.problems.append(LineError(line, None, "A NUL byte: this is not a text file."))
                return False
            if chunk:
                self.buffer, self.offset = self.buffer[self.offset :] + chunk, 0
                return True
        return False


def json_lines(lines: Lines) -> Iterator[tuple[int, dict] | LineError]:
    """Yield ``(line, object)`` per non-blank line of a JSON Lines upload, or LineErrors."""
    for item in nonblank_lines(lines):
        yield item if isinstance(item, LineError) else json_object(*item)


def json_object(line: int, text: str) -> tuple[int, dict] | LineError:
    """``(line, object)`` for a line of JSON Lines holding an object, else a LineError."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        return LineError(line, None, f"This is not valid JSON: {error.msg}.")
    except (RecursionError, ValueError) as error:
        return LineError(line, None, f"This is not valid JSON: {str(error)[:200]}.")
    if "\\u" in text and lone_surrogate(text.encode(errors="surrogatepass")) is not False:
        return LineError(line, None, SURROGATE)
    if too_deep(value, text):
        return LineError(line, None, f"The JSON nests deeper than {MAX_JSON_DEPTH} levels.")
    if not isinstance(value, dict):
        return LineError(line, None, "Each line must be a JSON object.")
    return line, value


# A lone surrogate is valid JSON but no character: PostgreSQL cannot store it, and
# ijson's C parser reads it as "?".
SURROGATE = "This is not valid JSON: an escaped surrogate (\\ud800-\\udfff) stands alone."
_ESCAPE = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def lone_surrogate(data: bytes, pending: bool = False) -> bool | None:
    """Whether the JSON text ``data`` escapes a surrogate (\\ud800-\\udfff) that is not
    half of a pair: True or False, or None when it ends on a high surrogate whose low half
    may open the next piece of the text (``pending`` says so for that piece)."""
    if not pending and not _SURROGATE_ESCAPE.search(data):
        return False
    high_end = 0 if pending else None
    for match in _ESCAPE.finditer(data):
        code = int(match[1], 16) if match[1] else None
        if high_end is not None:
            if match.start() != high_end or code is None or not 0xDC00 <= code <= 0xDFFF:
                return True
            high_end = None
        elif code is not None and 0xD800 <= code <= 0xDBFF:
            high_end = match.end()
        elif code is not None and 0xDC00 <= code <= 0xDFFF:
            return True
    if high_end is None:
        return False
    return None if high_end == len(data) else True


def too_deep(value, text: str) -> bool:
    """Whether ``value`` (decoded from ``text``) nests deeper than MAX_JSON_DEPTH."""
    if text.count("{") + text.count("[") <= MAX_JSON_DEPTH:
        return False
    level, depth = [value], 0
    while level:
        depth += 1
        if depth > MAX_JSON_DEPTH:
            return True
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, dict | list)
        ]
    return False


FUTURE_SKEW = timedelta(minutes=5)


def parse_time(text) -> tuple[datetime | None, str | None]:
    """An aware ISO 8601 time, in UTC, else an error message."""
    try:
        moment = datetime.fromisoformat(str(text).strip())
    except ValueError:
        return None, f'"{text}" is not an ISO 8601 time.'
    if moment.tzinfo is None:
        return None, f'"{text}" needs a time zone (for example Z or +00:00).'
    try:
        # PostgreSQL refuses offsets beyond 15:59 that Python accepts.
        return moment.astimezone(UTC), None
    except OverflowError:
        return None, f'"{text}" is out of range.'


def past_time(text) -> tuple[datetime | None, str | None]:
    """``parse_time``, refusing times later than now (plus a few minutes of clock skew):
    an event dated in the future would stay its rater's current answer until then."""
    moment, problem = parse_time(text)
    if moment is not None and moment > datetime.now(UTC) + FUTURE_SKEW:
        return None, f'"{text}" is in the future; events cannot be dated later than now.'
    return moment, problem


def text_field(value, name: str, line: int, *, limit: int, required=True):
    """A string field of at most ``limit`` characters, or a LineError."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return LineError(line, name, "is empty.") if required else ""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return LineError(line, name, "must be a string.")
    value = str(value).strip() if isinstance(value, str) else str(value)
    if "\x00" in value:
        return LineError(line, name, "contains a NUL character.")
    if len(value) > limit:
        return LineError(line, name, f"is longer than {limit} characters.")
    return value


def key_field(value, name: str, line: int, *, limit: int = 200):
    """An identifier (a document id): text without spaces or line ends, which would
    break the whitespace-separated qrels and run files it is exported to."""
    key = text_field(value, name, line, limit=limit)
    if isinstance(key, str) and _WHITESPACE.search(key):
        return LineError(line, name, f"{key[:100]!r} contains whitespace; ids cannot.")
    return key


_WHITESPACE = re.compile(r"\s")
MISSING_VALUES = {"nan", "null", "none", "n/a", "#n/a"}


def single_line_text(value, name: str, line: int, *, limit: int):
    """A one-line text such as a query; a spreadsheet's missing-value marker is refused."""
    text = text_field(value, name, line, limit=limit)
    if isinstance(text, str) and text.lower() in MISSING_VALUES:
        return LineError(line, name, f'"{text}" is how spreadsheets write a missing value.')
    if isinstance(text, str) and ("\n" in text or "\r" in text):
        return LineError(line, name, "contains a line break (is a quote left open?).")
    return text
