"""Reading uploads: lines, CSV records, JSON with line numbers, and errors that name them."""

import csv
import io
import json
import json.decoder
import json.scanner
from array import array
from bisect import bisect
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from functools import lru_cache

import numpy as np

from judgements.importers.rows import LineError

MAX_LINE_BYTES = 1 << 20
MAX_JSON_BYTES = 32 << 20


class Lines:
    """An upload's text lines with their line ends, numbered from 1.

    Whole blocks of lines are decoded at once, which is several times faster than
    line by line; only a block that fails is decoded again line by line to find
    the culprit. A line that is not UTF-8 or is longer than ``MAX_LINE_BYTES``
    comes out as a bare line end, and its error waits in ``pending`` for the
    parser to report before it skips the line.
    """

    def __init__(self, chunks: Iterable[bytes]):
        self.chunks, self.number, self.pending = iter(chunks), 0, []

    def __iter__(self) -> Iterator[str]:
        for block in self._blocks():
            if block is None:
                self.number += 1
                self._fail(f"The line is longer than {MAX_LINE_BYTES >> 10} KB.")
                yield "\n"
                continue
            try:
                text = block.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            # PostgreSQL cannot store NUL characters: such lines are refused here too.
            if text is None or "\x00" in text:
                yield from self._line_by_line(block)
                continue
            for line in io.StringIO(text.removeprefix("\ufeff") if not self.number else text):
                self.number += 1
                if len(line) > MAX_LINE_BYTES:
                    self._fail(f"The line is longer than {MAX_LINE_BYTES >> 10} KB.")
                    line = "\n"
                yield line

    def _line_by_line(self, block: bytes) -> Iterator[str]:
        for raw in io.BytesIO(block):
            self.number += 1
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                byte, column = raw[error.start], error.start + 1
                self._fail(f"Byte 0x{byte:02x} at column {column} is not UTF-8; save as UTF-8.")
                line = "\n"
            if "\x00" in line:
                self._fail("The line contains a NUL character.")
                line = "\n"
            yield line

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


@lru_cache(maxsize=4096)
def grade_of(text, grades: frozenset[int]) -> tuple[int | None, str | None]:
    """The grade in ``text`` if it is a whole number on the scale, else an error message."""
    # Cached: a file repeats a handful of grade spellings a million times.
    value = str(text).strip()
    if not value:
        return None, "is empty."
    try:
        number = float(value)
    except ValueError:
        return None, f'"{value}" is not a number.'
    if not number.is_integer():
        return None, f'"{value}" is not a whole number.'
    if int(number) not in grades:
        return None, f'"{value}" is outside the scale {scale_text(grades)}.'
    return int(number), None


def scale_text(grades: Iterable[int]) -> str:
    values = sorted(grades)
    if values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}-{values[-1]}"
    return ", ".join(map(str, values))


def csv_records(lines: Lines, required: tuple[str, ...], *, lone_first_column=False):
    """Yield ``(line, {column: value})`` per data line of a CSV upload, or LineErrors."""
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
    yield from _csv_rows(lines, reader, header, lone_first_column)


def _csv_rows(lines: Lines, reader, header: list[str], lone_first_column: bool):
    end = 1
    while True:
        start = end + 1
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            record = LineError(start, None, f"This is not valid CSV: {error}.")
        end = reader.line_num
        if lines.pending:
            yield from lines.drain()
        elif isinstance(record, LineError):
            yield record
        elif len(record) == len(header):
            yield start, dict(zip(header, record, strict=True))
        elif record and not (lone_first_column and len(record) == 1):
            message = f"{len(record)} columns where the header has {len(header)}."
            yield LineError(start, None, message)
    yield from lines.drain()


def nonblank_lines(lines: Lines) -> Iterator[tuple[int, str] | LineError]:
    """Yield ``(line, text)`` for every line that is not blank, or LineErrors."""
    seen = False
    for text in lines:
        if problems := lines.drain():
            seen = True
            yield from problems
        elif text.strip():
            seen = True
            yield lines.number, text
    yield from lines.drain() if seen else empty_file_errors(lines)


def split_lines(lines: Lines, columns: tuple[str, ...]):
    """Yield ``(line, fields)`` for whitespace-separated text formats, or LineErrors."""
    for item in nonblank_lines(lines):
        if isinstance(item, LineError):
            yield item
            continue
        line, parts = item[0], item[1].split()
        if len(parts) == len(columns):
            yield line, parts
        else:
            wanted = " ".join(columns)
            yield LineError(line, None, f"{len(parts)} columns where {wanted} are expected.")


class LineDict(dict):
    """A JSON object that remembers the line it starts on."""

    line = 0


def load_json(chunks: Iterable[bytes]) -> tuple[object, list[LineError]]:
    """Decode a whole JSON upload; every object in it is a LineDict with its line."""
    data = b"".join(chunks_capped(chunks, MAX_JSON_BYTES + 1))
    if len(data) > MAX_JSON_BYTES:
        limit = MAX_JSON_BYTES >> 20
        return None, [LineError(None, None, f"JSON files over {limit} MB are not accepted.")]
    if problem := _binary_problem(data[:4096]):
        return None, [problem]
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        return None, [LineError(line, None, "The file is not UTF-8; save it as UTF-8.")]
    if not text.strip():
        return None, [LineError(None, None, "The file is empty.")]
    try:
        return _LineDecoder(text).decode(text), []
    except json.JSONDecodeError as error:
        return None, [LineError(error.lineno, None, f"This is not valid JSON: {error.msg}.")]


def chunks_capped(chunks: Iterable[bytes], limit: int) -> Iterator[bytes]:
    read = 0
    for chunk in chunks:
        yield chunk
        read += len(chunk)
        if read >= limit:
            return


class _LineDecoder(json.JSONDecoder):
    # The pure-Python scanner calls parse_object for every "{", which the C one
    # does not, so only it lets each object learn the line it starts on.
    def __init__(self, text: str):
        super().__init__()
        newlines = [index for index, char in enumerate(text) if char == "\n"]

        def parse_object(s_and_end, *args, **kwargs):
            found, end = json.decoder.JSONObject(s_and_end, *args, **kwargs)
            located = LineDict(found)
            located.line = bisect(newlines, s_and_end[1] - 1) + 1
            return located, end

        self.parse_object = parse_object
        self.scan_once = json.scanner.py_make_scanner(self)


def json_lines(lines: Lines) -> Iterator[tuple[int, dict] | LineError]:
    """Yield ``(line, object)`` per non-blank line of a JSON Lines upload, or LineErrors."""
    for item in nonblank_lines(lines):
        if isinstance(item, LineError):
            yield item
            continue
        line, text = item
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            yield LineError(line, None, f"This is not valid JSON: {error.msg}.")
            continue
        if isinstance(value, dict):
            yield line, value
        else:
            yield LineError(line, None, "Each line must be a JSON object.")


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
