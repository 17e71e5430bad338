"""A search log read a block of lines at a time into columns: the rows and errors of
searchlogs.parsing, several times faster.

searchlogs.parsing reads one line at a time and is the reference: what a line means,
and what is wrong with it, is decided there. Here a block of lines is decoded with
orjson (three times faster than the json module) and each field checked a column at
a time. A line that orjson refuses, or any of whose fields is not in its plain form
(``parsing._plain_event``: strings with nothing to strip, numbers of the right type,
a time with its zone), is read by the reference instead, so the rows and the errors
are the same either way; only lines with something to say about them pay for it.
tests/searchlogs/test_columns.py holds the two to that on generated logs.
"""

import operator
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from itertools import chain, islice, repeat

import numpy as np
import orjson

from judgements.importers.json_reading import MAX_JSON_DEPTH
from judgements.importers.reading import Lines
from judgements.importers.rows import LineError
from searchlogs.parsing import (
    CLOCK_SKEW,
    KINDS,
    MAX_RANK,
    MAX_RESULTS,
    EventRow,
    Kind,
    _plain,
    _plain_seconds,
    line_events,
)

# Small enough that a block's objects stay in the processor's caches while each of
# its fields is read in turn (a column at a time), and that the COPY is fed often.
BLOCK_LINES = 5_000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)
# The UTC moments a datetime can hold; ``astimezone(UTC)`` overflows outside them.
EARLIEST = (datetime.min.replace(tzinfo=UTC) - EPOCH) // MICROSECOND
LATEST = (datetime.max.replace(tzinfo=UTC) - EPOCH) // MICROSECOND


@dataclass
class EventColumns:
    """Events one array or list per field, in the order of searchlogs.parsing.EventRow.

    ``at`` is in microseconds since 1970 (UTC). A field that the row's kind does not
    have is "", an empty list, False, 0 (``rank``) or NaN (``dwell``), as in EventRow.
    """

    line: np.ndarray
    event_id: list[str]
    kind: np.ndarray
    session: list[str]
    at: np.ndarray
    query_text: list[str]
    documents: list[list[str]]
    answered: np.ndarray
    document: list[str]
    rank: np.ndarray
    click: list[str]
    dwell: np.ndarray
    end_of_session: np.ndarray

    def __len__(self) -> int:
        return len(self.line)


def search_log_columns(
    chunks: Iterable[bytes], *, now: datetime | None = None
) -> Iterator[tuple[EventColumns, list[LineError]]]:
    """Parse a JSON Lines upload a block at a time: its events and its errors (by line).

    The same events and errors as ``parsing.search_log_jsonl``, grouped by block (in a
    block, events are grouped by kind; errors are in line order).
    """
    latest = (now or datetime.now(UTC)) + CLOCK_SKEW
    lines = Lines(chunks)
    read, any_event = iter(lines), False
    while block := list(islice(read, BLOCK_LINES)):
        first = lines.number - len(block) + 1
        columns, errors = _block(block, first, latest)
        errors = sorted([*lines.drain(), *errors], key=operator.attrgetter("line"))
        any_event = any_event or bool(len(columns) or errors)
        yield columns, errors
    errors = lines.drain()
    if not any_event and not errors:
        errors = [LineError(None, None, "The file is empty.")]
    if errors:
        yield _from_rows([]), errors


def _block(texts: list[str], first: int, latest: datetime) -> tuple[EventColumns, list[LineError]]:
    values = _decoded(texts)
    latest_micros = (latest - EPOCH) // MICROSECOND
    numbers = np.arange(first, first + len(texts))
    kinds = np.full(len(texts), -1, np.int8)
    objects = np.flatnonzero(np.fromiter(map(operator.is_, map(type, values), repeat(dict)),
                                         bool, len(values)))  # fmt: skip
    names = [values[i].get("type") for i in objects.tolist()]
    kinds[objects] = _kind_codes(names)
    parts, checked = [], np.zeros(len(texts), bool)
    for kind, read in _READERS.items():
        rows = np.flatnonzero(kinds == kind)
        plain, columns = read([values[i] for i in rows.tolist()], latest_micros)
        parts.append(_rows_taken(columns, numbers[rows[plain]], kind, plain))
        checked[rows[plain]] = True
    referred = [item for i in np.flatnonzero(~checked).tolist()
                for item in line_events(first + i, texts[i], latest)]  # fmt: skip
    parts.append(_from_rows([row for row in referred if isinstance(row, EventRow)]))
    errors = [error for error in referred if isinstance(error, LineError)]
    return _joined(parts), errors


def _decoded(texts: list[str]) -> list:
    """Each line's JSON value; None where orjson refuses it, or where it nests too deep."""
    try:
        values = list(map(orjson.loads, texts))
    except orjson.JSONDecodeError:
        values = [_loaded(text) for text in texts]
    # A line nesting deeper than MAX_JSON_DEPTH must be refused as the reference does.
    brackets = map(operator.add, map(str.count, texts, repeat("{")),
                   map(str.count, texts, repeat("[")))  # fmt: skip
    for i in np.flatnonzero(np.fromiter(brackets, np.int64, len(texts)) > MAX_JSON_DEPTH):
        values[i] = None
    return values


def _loaded(text: str):
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _kind_codes(names: list) -> np.ndarray:
    if set(map(type, names)) <= {str}:
        return np.fromiter(map(KINDS.get, names, repeat(-1)), np.int8, len(names))
    return np.array([KINDS.get(name, -1) if type(name) is str else -1 for name in names],
                    np.int8)  # fmt: skip


def _impressions(events: list[dict], latest: int) -> tuple[np.ndarray, dict]:
    plain, columns = _common(events, latest)
    columns["query_text"] = _field(events, "query")
    columns["documents"] = _field(events, "results", [])
    answered, columns["answered"] = _flags(_field(events, "answered", False))
    plain &= _plain_texts(columns["query_text"], 500) & answered
    return plain & _plain_results(columns["documents"]), columns


def _clicks(events: list[dict], latest: int) -> tuple[np.ndarray, dict]:
    plain, columns = _common(events, latest)
    columns["document"] = _field(events, "document")
    ranked, columns["rank"] = _ranks(_field(events, "rank"))
    return plain & _plain_texts(columns["document"], 200) & ranked, columns


def _dwells(events: list[dict], latest: int) -> tuple[np.ndarray, dict]:
    plain, columns = _common(events, latest)
    columns["click"] = _field(events, "click")
    flagged, ends = _flags(_field(events, "end_of_session", False))
    timed, columns["dwell"] = _seconds(_field(events, "seconds"), ends)
    columns["end_of_session"] = ends
    return plain & _plain_texts(columns["click"], 200) & flagged & timed, columns


_READERS = {Kind.IMPRESSION: _impressions, Kind.CLICK: _clicks, Kind.DWELL: _dwells}


def _common(events: list[dict], latest: int) -> tuple[np.ndarray, dict]:
    columns = {name: _field(events, key) for name, key in
               (("event_id", "id"), ("session", "session"))}  # fmt: skip
    timely, columns["at"] = _times(_field(events, "time"), latest)
    plain = _plain_texts(columns["event_id"], 200) & _plain_texts(columns["session"], 200)
    return plain & timely, columns


def _field(events: list[dict], key: str, default=None) -> list:
    return [event.get(key, default) for event in events]


def _plain_texts(values: list, limit: int) -> np.ndarray:
    """Per value, whether ``parsing._plain`` holds (a string text_field keeps as it is)."""
    size = len(values)
    if not set(map(type, values)) <= {str}:
        return np.fromiter(map(_plain, values, repeat(limit)), bool, size)
    lengths = np.fromiter(map(len, values), np.int64, size)
    plain = (lengths > 0) & (lengths <= limit)
    joined = "\x00".join(values)
    # Ids hold no space at all, which one look at the whole column tells (str.split
    # and str.strip both take as space what str.isspace does).
    if len(joined.split(maxsplit=1)) > 1:
        plain &= np.fromiter(map(operator.eq, map(str.strip, values), values), bool, size)
    if joined.count("\x00") >= size:  # More than the size - 1 joins: a value holds one.
        plain &= np.fromiter(map(operator.not_, map(operator.contains, values,
                                                    repeat("\x00"))), bool, size)  # fmt: skip
    return plain


def _times(values: list, latest: int) -> tuple[np.ndarray, np.ndarray]:
    """Microseconds since 1970 of plain times (with a zone) no later than ``latest``."""
    size = len(values)
    plain = _plain_texts(values, 10_000)
    try:
        moments = list(map(datetime.fromisoformat, values))
        since = list(map(operator.sub, moments, repeat(EPOCH)))
        micros = np.fromiter(map(operator.floordiv, since, repeat(MICROSECOND)), np.int64, size)
    except (TypeError, ValueError):  # Not a string, not ISO 8601, no zone.
        micros = np.fromiter(map(_micros, values), np.int64, size)
    plain &= (micros >= EARLIEST) & (micros <= min(latest, LATEST))
    return plain, micros


def _micros(value) -> int:
    """Microseconds since 1970 of an ISO 8601 time with a zone; else a value out of range."""
    try:
        return (datetime.fromisoformat(value) - EPOCH) // MICROSECOND
    except (TypeError, ValueError):
        return EARLIEST - 1


def _flags(values: list) -> tuple[np.ndarray, np.ndarray]:
    """Whether each value is true or false, and the values (False where not)."""
    if set(map(type, values)) <= {bool}:
        return np.ones(len(values), bool), np.array(values, bool)
    plain = np.array([type(value) is bool for value in values], bool)
    return plain, np.array([value is True for value in values], bool)


def _plain_results(results: list) -> np.ndarray:
    if not set(map(type, results)) <= {list}:
        return np.array([type(ids) is list and _plain_ids(ids) for ids in results], bool)
    counts = np.fromiter(map(len, results), np.int64, len(results))
    plain = counts <= MAX_RESULTS
    ids = _plain_texts(list(chain.from_iterable(results)), 200)
    plain[np.repeat(np.arange(len(results)), counts)[~ids]] = False
    return plain


def _plain_ids(ids: list) -> bool:
    return len(ids) <= MAX_RESULTS and all(map(_plain, ids))


def _ranks(values: list) -> tuple[np.ndarray, np.ndarray]:
    """Whether each value is a whole number from 1 to MAX_RANK, and the ranks (else 0)."""
    ranks = np.zeros(len(values), np.int64)
    if set(map(type, values)) <= {int}:
        try:
            ranks = np.fromiter(values, np.int64, len(values))
        except OverflowError:
            ranks[:] = [value if 1 <= value <= MAX_RANK else 0 for value in values]
    else:
        ranks[:] = [value if type(value) is int and 1 <= value <= MAX_RANK else 0
                    for value in values]  # fmt: skip
    plain = (ranks >= 1) & (ranks <= MAX_RANK)
    return plain, np.where(plain, ranks, 0)


def _seconds(values: list, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Whether each dwell is plain (seconds >= 0, or none at the end of a session), and
    the seconds (NaN where none)."""
    missing = np.fromiter(map(operator.is_, values, repeat(None)), bool, len(values))
    timed = np.flatnonzero(~ends)
    given = [values[i] for i in timed]
    if set(map(type, given)) <= {float}:
        seconds = np.array(given, np.float64)
        plain = (seconds >= 0) & (seconds < np.inf)
    else:
        plain = np.fromiter(map(_plain_seconds, given), bool, len(given))
        seconds = np.array([float(value) if ok else np.nan
                            for value, ok in zip(given, plain, strict=True)])  # fmt: skip
    dwell = np.full(len(values), np.nan)
    dwell[timed] = np.where(plain, seconds, np.nan)
    result = ends & missing
    result[timed] = plain
    return result, dwell


def _rows_taken(columns: dict, lines: np.ndarray, kind: int, plain: np.ndarray) -> EventColumns:
    """The plain events of one kind as EventColumns, other kinds' fields at their defaults."""
    keep, size = np.flatnonzero(plain), int(plain.sum())
    taken = {name: (values[plain] if isinstance(values, np.ndarray) else
                    [values[i] for i in keep]) for name, values in columns.items()}  # fmt: skip
    defaults = {
        "query_text": [""] * size, "documents": [[]] * size, "answered": np.zeros(size, bool),
        "document": [""] * size, "rank": np.zeros(size, np.int64), "click": [""] * size,
        "dwell": np.full(size, np.nan), "end_of_session": np.zeros(size, bool),
    }  # fmt: skip
    kinds = np.full(size, kind, np.int8)
    return EventColumns(line=lines, kind=kinds, **(defaults | taken))


def _from_rows(rows: list[EventRow]) -> EventColumns:
    """EventColumns of rows read by the reference."""
    return EventColumns(
        line=np.array([row.line for row in rows], np.int64),
        event_id=[row.event_id for row in rows],
        kind=np.array([row.kind for row in rows], np.int8),
        session=[row.session for row in rows],
        at=np.array([(row.at - EPOCH) // MICROSECOND for row in rows], np.int64),
        query_text=[row.query_text for row in rows],
        documents=[list(row.documents) for row in rows],
        answered=np.array([row.answered for row in rows], bool),
        document=[row.document for row in rows],
        rank=np.array([row.rank or 0 for row in rows], np.int64),
        click=[row.click for row in rows],
        dwell=np.array([np.nan if row.dwell is None else row.dwell for row in rows]),
        end_of_session=np.array([row.end_of_session for row in rows], bool),
    )


def _joined(parts: list[EventColumns]) -> EventColumns:
    joined = {}
    for name in (field.name for field in fields(EventColumns)):
        values = [getattr(part, name) for part in parts]
        is_array = isinstance(values[0], np.ndarray)
        joined[name] = np.concatenate(values) if is_array else list(chain.from_iterable(values))
    return EventColumns(**joined)
