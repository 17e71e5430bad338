"""Reading JSON uploads with line numbers: one value streamed (``json_values``) or one
object per line (``json_lines``), with the shape and depth checked."""

import json
import json.decoder
import json.scanner
import re
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

import ijson

from judgements.importers.reading import Lines, Unreadable, binary_problem, nonblank_lines
from judgements.importers.rows import LineError


class LineDict(dict):
    """A JSON object that remembers the line it starts on."""

    line = 0


MAX_JSON_BYTES = 32 << 20
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
                if problem := binary_problem(chunk):
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
