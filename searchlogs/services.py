"""Writing a search log: a batch of events is stored whole or not at all.

A batch (one API request, one file) is parsed a block of lines at a time
(searchlogs.columns), checked as a whole (event ids used once, every click after a
results page of its session, every dwell after a known click of its session; events
stored earlier count; searchlogs.batches) and COPY'd into the events table while it
is read (searchlogs.writing). A batch with any error is rolled back whole. Event ids
the project already has are skipped, so that sending a batch again changes nothing.
Batches of one project are written one at a time.
"""

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np
import orjson
from django.db import connection, transaction

from judgements.importers.rows import ErrorLog, LineError
from judgements.models import Project
from judgements.staging import copy_value
from searchlogs.batches import Batch, IngestResult
from searchlogs.columns import EventColumns, search_log_columns
from searchlogs.ubi import UbiBatch
from searchlogs.writing import EVENTS, EventWriter

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
NULL = "\\N"


@dataclass(frozen=True)
class LogFormat:
    """A search log's file format, as the upload page and the API name it."""

    name: str
    label: str


LOG_FORMATS = {
    "ours": LogFormat("ours", "JSON Lines of impressions, clicks and dwells (this app's)"),
    "ubi": LogFormat(
        "ubi",
        "User Behavior Insights 1.3.0: ubi_queries and ubi_events (NDJSON, an OpenSearch "
        "_bulk file or _search/scroll responses)",
    ),
}
FORMATS = tuple(LOG_FORMATS)
# Where a UBI log's click positions start: UBI's 1, or 0 (Chorus's ESCI sample).
ORDINAL_BASES = (1, 0)


@transaction.atomic
def search_log_ingest(
    *,
    project: Project,
    upload: Iterable[bytes],
    format: str = "ours",
    ubi_role: str = "auto",
    ordinal_base: int = 1,
) -> IngestResult:
    """Store a batch of search events: our JSON Lines (see searchlogs.parsing), or UBI
    records (``format="ubi"``, see searchlogs.ubi; ``ubi_role`` and ``ordinal_base``
    as there).

    Raises ``ImportRejected`` listing every bad line, and writes nothing, if any
    line is bad. Events whose id the project already has are skipped.
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {format!r}")
    with _collector_paused():
        _lock_log(project)
        batch = Batch(project)
        other_actions = {}
        if format == "ubi":
            reader = UbiBatch(project_id=project.pk, ordinal_base=ordinal_base)
            reader.read(upload, role=ubi_role)
            blocks, other_actions = reader.blocks(), dict(reader.other_actions)
        else:
            blocks = search_log_columns(upload)
        with EventWriter(COLUMNS) as writer:
            errors = _read(blocks, batch, writer)
            batch.check()  # While PostgreSQL stores the last blocks.
            writer.finish()
            for error in batch.errors():
                errors.add(error)
            # Whole-batch checks come last; list every error in file order all the same.
            errors.kept.sort(key=lambda error: error.line or 0)
            errors.raise_if_any()
            created = writer.store(project.pk, batch.query_ids)
        if created:
            _raise_version(project)
        return replace(batch.result(created), other_actions=other_actions)


def _read(blocks, batch: Batch, writer: EventWriter) -> ErrorLog:
    """Take the parsed blocks into ``batch``, COPYing their rows while none is bad."""
    errors = ErrorLog()
    for events, found in blocks:
        for error in found:
            errors.add(error)
        keys, query_ids = batch.take(events)
        if errors:
            writer.cancel()
        else:
            writer.write(copy_text(batch.project.pk, events, keys, query_ids), len(events))
    if not batch.rows and not errors:
        errors.add(LineError(None, None, "The batch has no events."))
    return errors


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector, off while a batch is read: it would scan the parsed
    events over and over (each block makes a million objects), which doubles the
    time of parsing, and they hold no reference cycles to collect."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _lock_log(project: Project) -> None:
    """Wait for any other batch of the project (so that which ids are stored holds)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, %s))",
                       [EVENTS, project.pk])  # fmt: skip


def _raise_version(project: Project) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO searchlogs_searchlogstate AS state (project_id, version) VALUES (%s, 1)"
            " ON CONFLICT (project_id) DO UPDATE SET version = state.version + 1",
            [project.pk],
        )


KIND_TEXT = ("0", "1", "2")


def copy_text(
    project_id: int, events: EventColumns, keys: list[str], query_ids: list[int | None]
) -> bytes:
    """The events as rows of COPY's text format, in the order of COLUMNS."""
    size = len(events)
    moments = events.at.astype("datetime64[us]")
    columns = [
        [str(project_id)] * size,
        _texts(events.event_id),
        list(map(KIND_TEXT.__getitem__, events.kind.tolist())),
        _texts(events.session),
        np.datetime_as_string(moments, unit="us", timezone="UTC").tolist(),
        _texts(events.query_text),
        _texts(keys),
        [NULL if query is None else str(query) for query in query_ids],
        _texts([orjson.dumps(ids).decode() if ids else "[]" for ids in events.documents]),
        _flags(events.answered),
        _texts(events.document),
        [str(rank) if rank else NULL for rank in events.rank.tolist()],
        _texts(events.click),
        [NULL if seconds != seconds else repr(seconds) for seconds in events.dwell.tolist()],
        _flags(events.end_of_session),
    ]
    rows = "\n".join(map("\t".join, zip(*columns, strict=True)))
    return f"{rows}\n".encode() if size else b""


def _texts(values: list[str]) -> list[str]:
    # Most texts need no escaping, and one look at all of them says so.
    joined = "".join(values)
    if joined.isprintable() and "\\" not in joined:
        return values
    return list(map(copy_value, values))


def _flags(values: np.ndarray) -> list[str]:
    return np.where(values, "t", "f").tolist()
