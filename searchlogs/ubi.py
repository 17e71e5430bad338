"""User Behavior Insights (UBI 1.3.0) logs read into our events: ``ubi_queries`` and
``ubi_events`` as NDJSON, as OpenSearch ``_bulk`` files, or as ``_search``/scroll dumps.

What a line may be:

- a UBI record (one JSON object): a query record (``ubi_queries``) or an event
  (``ubi_events``); with ``role="auto"`` a record with ``action_name`` is an event;
- a ``_bulk`` action (``{"index": {"_index": "ubi_queries", ...}}`` or ``create``),
  whose next line is the record, of the index it names;
- a ``_search`` or scroll response (``{"hits": {"hits": [...]}}``), one per line, each
  hit's ``_source`` a record of the index its ``_index`` names.

Every record is checked against UBI's published JSON Schema (searchlogs.ubi_schema);
a field whose value is null counts as absent first, as OpenSearch indexes it. Then:

- a query record is a results page: its ``query_id`` is its event id, ``user_query``
  its query, ``query_response_hit_ids`` its results. Its session is the smallest
  ``session_id`` of the events naming it, else its ``client_id``, else its query id;
- a ``click`` event is a click on ``event_attributes.object.object_id`` in the session
  of its query, at rank ``position.ordinal`` (from ``ordinal_base``, 1 by default:
  "the nth position"; some logs count from 0), or, without an ordinal, the document's
  place among its query's hits; ``event_attributes.dwell_time`` (seconds), if given,
  is its dwell. Its event id (``click_id``) is a digest of its query, time, document
  and ordinal, so that a record sent twice is one click;
- other actions (impressions of single documents, add_to_cart, ...) are checked and
  counted but not stored: the online metrics use pages and clicks.

Times need a zone. An event naming a query that neither the batch nor the stored log
has is an error, as is a query id used by two records.
"""

import hashlib
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import NamedTuple

import numpy as np
import orjson
from django.db import connection

from judgements.importers.json_reading import json_object
from judgements.importers.reading import Lines, nonblank_lines
from judgements.importers.rows import LineError
from searchlogs.columns import EPOCH, MICROSECOND, EventColumns
from searchlogs.parsing import CLOCK_SKEW, MAX_RANK, Kind
from searchlogs.ubi_schema import schema_errors

ROLES = ("auto", "query", "event")
INDEXES = {"ubi_queries": "query", "ubi_events": "event"}
BLOCK = 5_000
# The columns of our events table these fill.
LIMITS = {"query_id": 100, "session": 200, "document": 200, "user_query": 500}


class Record(NamedTuple):
    line: int
    where: str  # the record's place in its line ("" for a plain record)
    role: str
    data: dict


def ubi_records(chunks: Iterable[bytes], *, role: str = "auto") -> Iterator[Record | LineError]:
    """The records of an upload in any of the three forms, with line-numbered errors."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, not {role!r}")
    action: tuple[int, str] | None = None
    for item in nonblank_lines(Lines(chunks)):
        if isinstance(item, LineError):
            yield item
            continue
        line, text = item
        data = _object(line, text)
        if isinstance(data, LineError):
            yield data
        elif action is not None:
            yield Record(line, "", action[1], _without_nulls(data))
            action = None
        elif (bulk := _bulk_action(data)) is not None:
            action = (line, bulk) if isinstance(bulk, str) else None
            if isinstance(bulk, LineError):
                yield bulk._replace(line=line)
        elif isinstance(data.get("hits"), dict) and "hits" in data["hits"]:
            yield from _hits(line, data["hits"]["hits"])
        else:
            kind = role if role != "auto" else ("event" if "action_name" in data else "query")
            yield Record(line, "", kind, _without_nulls(data))
    if action is not None:
        yield LineError(action[0], None, "A _bulk action without its record on the next line.")


def _object(line: int, text: str) -> dict | LineError:
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        parsed = json_object(line, text)  # Its error names what is wrong.
        return parsed if isinstance(parsed, LineError) else parsed[1]
    if not isinstance(data, dict):
        return LineError(line, None, "A line must hold one JSON object.")
    return data


def _bulk_action(data: dict) -> str | LineError | None:
    """The role of the record a _bulk action line announces; None if not an action."""
    if len(data) != 1:
        return None
    (verb, target), = data.items()  # fmt: skip
    if not isinstance(target, dict) or "_index" not in target:
        return None
    if verb not in ("index", "create"):
        return LineError(0, verb, "Only index and create actions hold UBI records.")
    return _role_of(str(target["_index"])) or LineError(0, "_index", _unknown(target["_index"]))


def _role_of(index: str) -> str | None:
    return next((role for name, role in INDEXES.items() if name in index), None)


def _unknown(index) -> str:
    return f'"{index}" is neither a ubi_queries nor a ubi_events index.'


def _hits(line: int, hits) -> Iterator[Record | LineError]:
    if not isinstance(hits, list):
        yield LineError(line, "hits.hits", "must be a list of hits.")
        return
    for number, hit in enumerate(hits):
        where = f"hits.hits[{number}]"
        if not isinstance(hit, dict) or not isinstance(hit.get("_source"), dict):
            yield LineError(line, where, "A hit must be an object with a _source object.")
        elif (role := _role_of(str(hit.get("_index", "")))) is None:
            yield LineError(line, f"{where}._index", _unknown(hit.get("_index")))
        else:
            yield Record(line, f"{where}._source", role, _without_nulls(hit["_source"]))


def _without_nulls(data: dict) -> dict:
    """The object with every null-valued field left out, at every depth of objects."""
    return {key: _without_nulls(value) if isinstance(value, dict) else value
            for key, value in data.items() if value is not None}  # fmt: skip


def click_id(query_id: str, micros: int, document: str, ordinal: int | None) -> str:
    """A click's event id: the md5 of its query, time, document and ordinal (as
    searchlogs.parquet computes it in SQL, so that both give clicks one order)."""
    text = " ".join((query_id, str(micros), document, "" if ordinal is None else str(ordinal)))
    return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()


class _Query(NamedTuple):
    line: int
    micros: int
    text: str
    client: str
    hits: tuple


class _Click(NamedTuple):
    line: int
    query_id: str
    micros: int
    document: str
    ordinal: int | None
    dwell: float | None


class UbiBatch:
    """A UBI upload read whole (queries must be known before their clicks are placed),
    then given as blocks of EventColumns with the errors, as searchlogs.columns does."""

    def __init__(self, *, project_id: int, ordinal_base: int = 1, now: datetime | None = None):
        if ordinal_base not in (0, 1):
            raise ValueError("ordinal_base must be 0 or 1.")
        self.project_id, self.base = project_id, ordinal_base
        self.latest = (now or datetime.now(UTC)) + CLOCK_SKEW
        self.queries: dict[str, _Query] = {}
        self.sessions: dict[str, str] = {}  # query id -> smallest session id naming it
        self.named: list[tuple[int, str, str]] = []  # (line, field, query id) of events
        self.clicks: list[_Click] = []
        self.other_actions: Counter[str] = Counter()
        self.errors: list[LineError] = []
        self.refused: set[str] = set()  # Query ids of records with errors.

    def read(self, chunks: Iterable[bytes], *, role: str = "auto") -> None:
        for item in ubi_records(chunks, role=role):
            if isinstance(item, LineError):
                self.errors.append(item)
            elif problems := schema_errors(item.role, item.data):
                self.errors += [LineError(item.line, _at(item.where, path), message)
                                for path, message in problems]  # fmt: skip
                self._refused(item)
            elif item.role == "query":
                self._query(item)
            else:
                self._event(item)

    def _refused(self, record: Record) -> None:
        """A bad query record's id still names a query: its events are not errors too."""
        query_id = record.data.get("query_id")
        if record.role == "query" and isinstance(query_id, str):
            self.refused.add(query_id)

    def _query(self, record: Record) -> None:
        data, line = record.data, record.line
        query_id = self._text(record, "query_id", data.get("query_id"))
        micros = self._micros(record, data.get("timestamp"))
        text = self._text(record, "user_query", data.get("user_query"))
        if query_id is None or micros is None or text is None:
            self._refused(record)
            return
        if query_id in self.queries:
            message = f'"{query_id}" is the query id of line {self.queries[query_id].line} too.'
            self.errors.append(LineError(line, _at(record.where, "query_id"), message))
            return
        hits = tuple(data.get("query_response_hit_ids", ()))
        client = str(data.get("client_id", ""))
        self.queries[query_id] = _Query(line, micros, text, client, hits)

    def _event(self, record: Record) -> None:
        data, action = record.data, record.data["action_name"]
        micros = self._micros(record, data.get("timestamp"))
        query_id = data.get("query_id")
        session = data.get("session_id")
        if query_id is not None:
            self.named.append((record.line, _at(record.where, "query_id"), query_id))
            if session and (query_id not in self.sessions or session < self.sessions[query_id]):
                self.sessions[query_id] = session
        if action != "click":
            self.other_actions[action] += 1
            return
        attributes = data.get("event_attributes", {})
        found = attributes.get("object", {}).get("object_id")
        document = None if found is None else self._text(record, "document", str(found))
        if query_id is None or found is None:
            missing = "query_id" if query_id is None else "event_attributes.object.object_id"
            self.errors.append(LineError(record.line, _at(record.where, missing),
                                         "is missing: a click needs it."))  # fmt: skip
            return
        dwell = attributes.get("dwell_time")
        if dwell is not None and (isinstance(dwell, bool) or not isinstance(dwell, int | float)
                                  or not 0 <= dwell < float("inf")):  # fmt: skip
            field = _at(record.where, "event_attributes.dwell_time")
            self.errors.append(LineError(record.line, field, "must be seconds >= 0."))
            return
        if micros is None or document is None:
            return
        ordinal = attributes.get("position", {}).get("ordinal")
        self.clicks.append(_Click(record.line, query_id, micros, document, ordinal,
                                  None if dwell is None else float(dwell)))  # fmt: skip

    def _text(self, record: Record, name: str, value) -> str | None:
        field = _at(record.where, "event_attributes.object.object_id" if name == "document"
                    else name)  # fmt: skip
        if value is None or value == "":
            self.errors.append(LineError(record.line, field, "is missing."))
            return None
        limit = LIMITS.get(name)
        if limit and len(value) > limit:
            message = f"is longer than the {limit} characters this log keeps."
            self.errors.append(LineError(record.line, field, message))
            return None
        return value

    def _micros(self, record: Record, value) -> int | None:
        field = _at(record.where, "timestamp")
        problem = None
        try:
            moment = datetime.fromisoformat(value) if isinstance(value, str) else None
        except ValueError:
            moment, problem = None, f'"{value}" is not an ISO 8601 time.'
        if moment is None:
            problem = problem or "is missing."
        elif moment.tzinfo is None:
            problem = f'"{value}" has no time zone (add Z or an offset such as +00:00).'
        elif moment > self.latest:
            problem = f'"{value}" is in the future (more than 5 minutes from now).'
        if problem:
            self.errors.append(LineError(record.line, field, problem))
            return None
        return (moment - EPOCH) // MICROSECOND

    def blocks(self) -> Iterator[tuple[EventColumns, list[LineError]]]:
        """The batch's events a block at a time, and all its errors (in line order)."""
        stored = self._stored_pages()
        errors = self.errors + self._unknown_queries(stored)
        rows = self._page_rows() + self._click_rows(stored, errors)
        errors.sort(key=lambda error: error.line or 0)
        if not rows and not errors:
            errors.append(LineError(None, None, "The batch has no query record and no click."))
        rows.sort(key=lambda row: row[0])
        for start in range(0, max(len(rows), 1), BLOCK):
            yield _columns(rows[start : start + BLOCK]), errors if start == 0 else []

    def _stored_pages(self) -> dict[str, tuple[str, tuple]]:
        """Session and results of the stored pages that the batch's events name."""
        wanted = {query for _, _, query in self.named if query not in self.queries}
        if not wanted:
            return {}
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT event_id, session_id, documents FROM searchlogs_searchevent"
                " WHERE project_id = %s AND kind = %s AND event_id = ANY(%s)",
                [self.project_id, Kind.IMPRESSION, sorted(wanted)],
            )
            # A raw cursor gives jsonb as its text.
            return {event: (session, tuple(orjson.loads(docs))) for event, session, docs in cursor}

    def _unknown_queries(self, stored: dict) -> list[LineError]:
        message = 'names no query record ("{}" is in neither this batch nor the log).'
        return [LineError(line, field, message.format(query)) for line, field, query in self.named
                if query not in self.queries and query not in stored
                and query not in self.refused]  # fmt: skip

    def _session(self, query_id: str) -> str:
        query = self.queries[query_id]
        return self.sessions.get(query_id) or query.client or query_id

    def _page_rows(self) -> list[tuple]:
        return [(query.line, query_id, Kind.IMPRESSION, self._session(query_id), query.micros,
                 query.text, list(query.hits), "", 0, "", np.nan, False)
                for query_id, query in self.queries.items()]  # fmt: skip

    def _click_rows(self, stored: dict, errors: list[LineError]) -> list[tuple]:
        rows, seen = [], set()
        for click in self.clicks:
            if click.query_id in self.queries:
                session, hits = self._session(click.query_id), self.queries[click.query_id].hits
            elif click.query_id in stored:
                session, hits = stored[click.query_id]
            else:
                continue  # Named no query: already an error.
            rank = self._rank(click, hits, errors)
            event = click_id(click.query_id, click.micros, click.document, click.ordinal)
            if rank is None or event in seen:
                continue  # An error, or the same record again: one click.
            seen.add(event)
            rows.append((click.line, event, Kind.CLICK, session, click.micros, "", [],
                         click.document, rank, "", np.nan, False))  # fmt: skip
            if click.dwell is not None:
                moment = click.micros + round(click.dwell * 1e6)
                rows.append((click.line, f"{event}.dwell", Kind.DWELL, session, moment, "", [],
                             "", 0, event, click.dwell, False))  # fmt: skip
        return rows

    def _rank(self, click: _Click, hits: tuple, errors: list[LineError]) -> int | None:
        field = "event_attributes.position.ordinal"
        if click.ordinal is None:
            if click.document in hits:
                return hits.index(click.document) + 1
            message = "is missing, and the document is not among its query's hits."
            errors.append(LineError(click.line, field, message))
            return None
        rank = click.ordinal + 1 - self.base
        if not 1 <= rank <= MAX_RANK:
            message = (f"{click.ordinal}: positions count from {self.base} here"
                       + (" (import with ordinal base 0 for a log that counts from 0)."
                          if self.base == 1 and click.ordinal == 0 else "."))  # fmt: skip
            errors.append(LineError(click.line, field, message))
            return None
        return rank


def _at(where: str, path: str) -> str:
    return f"{where}.{path}" if where else path


def _columns(rows: list[tuple]) -> EventColumns:
    if not rows:
        rows = []
    parts = list(zip(*rows, strict=True)) if rows else [()] * 12
    line, event, kind, session, at, text, docs, document, rank, click, dwell, ended = parts
    return EventColumns(
        line=np.array(line, np.int64), event_id=list(event), kind=np.array(kind, np.int8),
        session=list(session), at=np.array(at, np.int64), query_text=list(text),
        documents=list(docs), answered=np.zeros(len(rows), bool), document=list(document),
        rank=np.array(rank, np.int64), click=list(click), dwell=np.array(dwell, np.float64),
        end_of_session=np.array(ended, bool),
    )  # fmt: skip
