"""Writing a search log: a batch of events is stored whole or not at all.

A batch (one API request, one file) is parsed (searchlogs.parsing), checked as a
whole (event ids used once, every click after a results page of its session, every
dwell after a known click of its session; events stored earlier count), COPY'd into
a temporary table and written in one INSERT that skips event ids already stored,
so that sending a batch again changes nothing.
"""

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from django.db import connection, transaction

from judgements import bulk
from judgements.importers.reading import Duplicates
from judgements.importers.rows import ErrorLog, LineError
from judgements.models import Project
from judgements.staging import Staging, copy_value
from searchlogs.matching import normalised, query_keys
from searchlogs.models import SearchEvent
from searchlogs.parsing import EventRow, Kind, search_log_jsonl

COPY_BATCH = 20_000
UNMATCHED_SHOWN = 10
COLUMNS = {
    "project_id": "bigint",
    "event_id": "text",
    "kind": "smallint",
    "session_id": "text",
    "at": "timestamptz",
    "query_text": "text",
    "query_key": "text",
    "query_id": "bigint",
    "documents": "jsonb",
    "answered": "boolean",
    "document": "text",
    "rank": "integer",
    "click_event_id": "text",
    "dwell_seconds": "double precision",
    "end_of_session": "boolean",
}


@dataclass(frozen=True)
class IngestResult:
    """What a batch held and did. ``unmatched_texts``: the most frequent unmatched
    normalised query texts of the batch with their counts."""

    rows: int
    created: int
    already_stored: int
    kinds: dict[str, int] = field(default_factory=dict)
    unmatched: int = 0
    unmatched_texts: list[tuple[str, int]] = field(default_factory=list)


@transaction.atomic
def search_log_ingest(*, project: Project, upload: Iterable[bytes]) -> IngestResult:
    """Store a JSON Lines batch of search events (see searchlogs.parsing).

    Raises ``ImportRejected`` listing every bad line, and writes nothing, if any
    line is bad. Events whose id the project already has are skipped.
    """
    batch = _Batch(project)
    staging = Staging(SearchEvent, COLUMNS, order="session_id, at")
    errors, pending = ErrorLog(), []
    for item in search_log_jsonl(upload):
        if isinstance(item, LineError):
            errors.add(item)
            continue
        line = batch.take(item)
        if not errors:
            pending.append(line)
            if len(pending) >= COPY_BATCH:
                staging.copy(pending)
                pending = []
    for error in [*batch.ids.errors(), *batch.order_errors()]:
        errors.add(error)
    if not batch.rows and not errors:
        errors.add(LineError(None, None, "The batch has no events."))
    # Whole-batch checks come last; list every error in file order all the same.
    errors.kept.sort(key=lambda error: error.line or 0)
    errors.raise_if_any()
    staging.copy(pending)
    created = _insert_new(staging)
    if created:
        _raise_version(project)
    return batch.result(created)


class _Pending(NamedTuple):
    """What the order checks need of a click or dwell (a fraction of its row's memory)."""

    kind: int
    line: int
    session: str
    moment: float
    click: str


class _Batch:
    """Turns rows into COPY lines and remembers what the whole-batch checks need."""

    def __init__(self, project: Project):
        self.project = project
        self.keys = query_keys(project.queries.values_list("id", "text"))
        self.ids = Duplicates("id", "This event id")
        self.kinds: Counter[int] = Counter()
        self.unmatched: Counter[str] = Counter()
        self.first_page: dict[str, float] = {}  # session -> earliest impression
        self.clicks: dict[str, tuple[str, float]] = {}  # click id -> (session, time)
        self.to_check: list[_Pending] = []
        self.rows = 0

    def take(self, row: EventRow) -> str:
        self.rows += 1
        self.kinds[row.kind] += 1
        self.ids.add(row.event_id, row.line)
        moment = row.at.timestamp()
        query_key, query_id = "", None
        if row.kind == Kind.IMPRESSION:
            query_key = normalised(row.query_text)
            query_id = self.keys.get(query_key)
            if query_id is None:
                self.unmatched[query_key] += 1
            earliest = self.first_page.get(row.session)
            if earliest is None or moment < earliest:
                self.first_page[row.session] = moment
        else:
            if row.kind == Kind.CLICK:
                self.clicks[row.event_id] = (row.session, moment)
            self.to_check.append(_Pending(row.kind, row.line, row.session, moment, row.click))
        return _copy_line(self.project.pk, row, query_key, query_id)

    def order_errors(self) -> list[LineError]:
        """Clicks before any results page of their session; dwells of unknown clicks."""
        clicks = [row for row in self.to_check if row.kind == Kind.CLICK]
        dwells = [row for row in self.to_check if row.kind == Kind.DWELL]
        stored_pages = _stored_first_pages(self.project, self._sessions_to_look_up(clicks))
        missing = {row.click for row in dwells if row.click not in self.clicks}
        stored_clicks = _stored_clicks(self.project, missing)
        errors = [error for row in clicks if (error := self._click_error(row, stored_pages))]
        errors += [error for row in dwells if (error := self._dwell_error(row, stored_clicks))]
        return sorted(errors, key=lambda error: error.line)

    def _sessions_to_look_up(self, clicks: list["_Pending"]) -> set[str]:
        return {
            row.session
            for row in clicks
            if self.first_page.get(row.session, float("inf")) > row.moment
        }

    def _click_error(self, row: "_Pending", stored: dict[str, float]) -> LineError | None:
        moment = row.moment
        earliest = min(
            self.first_page.get(row.session, moment + 1), stored.get(row.session, moment + 1)
        )
        if earliest <= moment:
            return None
        message = f'No results page of session "{row.session}" at or before this click.'
        return LineError(row.line, "session", message)

    def _dwell_error(self, row: "_Pending", stored) -> LineError | None:
        found = self.clicks.get(row.click) or stored.get(row.click)
        if found is None:
            return LineError(row.line, "click", f'No click "{row.click}" in this batch or stored.')
        session, moment = found
        if session != row.session:
            message = f'Click "{row.click}" belongs to session "{session}", not "{row.session}".'
            return LineError(row.line, "click", message)
        if row.moment < moment:
            return LineError(row.line, "time", f'is before click "{row.click}".')
        return None

    def result(self, created: int) -> IngestResult:
        return IngestResult(
            rows=self.rows,
            created=created,
            already_stored=self.rows - created,
            kinds={Kind(kind).label: count for kind, count in sorted(self.kinds.items())},
            unmatched=sum(self.unmatched.values()),
            unmatched_texts=self.unmatched.most_common(UNMATCHED_SHOWN),
        )


def _copy_line(project_id: int, row: EventRow, query_key: str, query_id: int | None) -> str:
    """The row in COPY's text format, in the order of COLUMNS."""
    documents = _text(json.dumps(row.documents)) if row.documents else "[]"
    return (
        f"{project_id}\t{_text(row.event_id)}\t{row.kind}\t{_text(row.session)}\t"
        f"{row.at.isoformat()}\t{_text(row.query_text)}\t{_text(query_key)}\t"
        f"{copy_value(query_id)}\t{documents}\t{'t' if row.answered else 'f'}\t"
        f"{_text(row.document)}\t{copy_value(row.rank)}\t{_text(row.click)}\t"
        f"{copy_value(row.dwell)}\t{'t' if row.end_of_session else 'f'}\n"
    )


def _text(value: str) -> str:
    # Most texts need no escaping; checking is several times faster than escaping.
    return value if value.isprintable() and "\\" not in value else copy_value(value)


def _raise_version(project: Project) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO searchlogs_searchlogstate AS state (project_id, version) VALUES (%s, 1)"
            " ON CONFLICT (project_id) DO UPDATE SET version = state.version + 1",
            [project.pk],
        )


def _stored_first_pages(project: Project, sessions: set[str]) -> dict[str, float]:
    if not sessions:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT session_id, extract(epoch FROM min(at)) FROM searchlogs_searchevent"
            " WHERE project_id = %s AND kind = %s AND session_id = ANY(%s) GROUP BY session_id",
            [project.pk, Kind.IMPRESSION, list(sessions)],
        )
        return {session: float(moment) for session, moment in cursor.fetchall()}


def _stored_clicks(project: Project, click_ids: set[str]) -> dict[str, tuple[str, float]]:
    if not click_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT event_id, session_id, extract(epoch FROM at) FROM searchlogs_searchevent"
            " WHERE project_id = %s AND kind = %s AND event_id = ANY(%s)",
            [project.pk, Kind.CLICK, list(click_ids)],
        )
        return {event: (session, float(moment)) for event, session, moment in cursor.fetchall()}


def _insert_new(staging: Staging) -> int:
    """INSERT the staged events whose id the project does not have; return how many."""
    if staging.empty:
        return 0
    names = ", ".join(COLUMNS)
    with connection.cursor() as cursor:
        # As in judgements' imports: the foreign keys (the project, the matched
        # queries) were read in this transaction; checking them row by row at commit
        # would cost more than the insert, so they are locked and counted instead.
        skipped = bulk.skip_foreign_key_checks()
        cursor.execute(
            f"INSERT INTO searchlogs_searchevent ({names}) SELECT {names} FROM {staging.table}"
            f" ORDER BY {staging.order} ON CONFLICT (project_id, event_id) DO NOTHING"
        )
        created = cursor.rowcount
        if skipped:
            cursor.execute("SET LOCAL session_replication_role = origin")
            staging._lock_referenced_rows(cursor)
    return created
