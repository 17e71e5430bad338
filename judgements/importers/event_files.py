"""Parsers for this app's judgement event files (JSON lines and CSV), as it exports them."""

from collections.abc import Iterable

from judgements.importers.catalogue import query_by_text
from judgements.importers.csv_reading import csv_records
from judgements.importers.fields import grade_of, past_time, text_field
from judgements.importers.json_reading import json_lines
from judgements.importers.reading import Duplicates, Lines
from judgements.importers.rows import (
    JudgementRow,
    LineError,
    Vocabulary,
)

KINDS = ("grade", "cant_tell", "retract")
EVENT_COLUMNS = ("id", "query", "document", "rater", "kind", "grade", "note", "created_at")


def events_jsonl(chunks: Iterable[bytes], vocabulary: Vocabulary):
    """Judgement events as this app exports them; see EVENT_COLUMNS."""
    yield from _events(json_lines(Lines(chunks)), vocabulary)


def events_csv(chunks: Iterable[bytes], vocabulary: Vocabulary):
    records = csv_records(Lines(chunks), ("query", "document", "rater", "grade"))
    yield from _events(records, vocabulary)


def _events(records, vocabulary: Vocabulary):
    seen, ids = Duplicates(None, "This event"), Duplicates("id", "This event id")
    for item in records:
        if isinstance(item, LineError):
            yield item
            continue
        row = event_row(*item, vocabulary)
        if isinstance(row, list):
            yield from row
            continue
        key = (row.query_id, row.document_id, row.rater_id, row.kind, row.grade, row.created_at)
        seen.add(key, row.line)
        if row.event_id:
            ids.add(row.event_id, row.line)
        yield row
    yield from seen.errors()
    yield from ids.errors()


def event_row(line: int, record: dict, vocabulary: Vocabulary) -> JudgementRow | list:
    query = query_by_text(line, record.get("query"), vocabulary, "query")
    document = vocabulary.documents.get(str(record.get("document", "")).strip())
    username = str(record.get("rater", "")).strip()
    rater = vocabulary.raters.get(username)
    kind = str(record.get("kind") or "grade").strip()
    value = record.get("grade")
    grade, problem = grade_of("" if value is None else value, vocabulary.grades)
    if kind != "grade":
        grade, problem = None, None if value in (None, "") else f"A {kind} event has no grade."
    note = text_field(record.get("note"), "note", line, limit=10_000, required=False)
    created_at, late = past_time(record["created_at"]) if record.get("created_at") else (None, "")
    event_id = text_field(record.get("id"), "id", line, limit=200, required=False)
    errors = [
        query if isinstance(query, LineError) else None,
        document is None and LineError(line, "document", "is not a document of the project."),
        rater is None and _rater_problem(line, username, vocabulary),
        kind not in KINDS and LineError(line, "kind", f"must be one of {', '.join(KINDS)}."),
        problem and LineError(line, "grade", problem),
        note if isinstance(note, LineError) else None,
        event_id if isinstance(event_id, LineError) else None,
        late and LineError(line, "created_at", late),
    ]
    if errors := [error for error in errors if error]:
        return errors
    return JudgementRow(line, query, document, grade, kind, rater, note, created_at, event_id)


def _rater_problem(line: int, username: str, vocabulary: Vocabulary) -> LineError:
    if username in vocabulary.users:
        return LineError(line, "rater", f'"{username}" is not an active user with the rater role.')
    return LineError(line, "rater", "is not a user of this site.")
