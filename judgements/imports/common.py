"""What every import shares: reading the upload, the rows in batches, the summary, the
project's vocabulary, and creating the documents and queries a file names.

A parser (``judgements.importers``) turns an upload into rows, skips and
line-numbered errors. Rows are written in batches as they come; the first error
stops the writing while parsing goes on, to report every error at once; raising
ImportRejected at the end rolls back what was written. So an import is all or
nothing, and memory stays flat for a file of any length.
"""

import io
import json
import os
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.db import DataError, IntegrityError, connection, transaction

from judgements import bulk, importers
from judgements.importers import (
    DocumentRow,
    ErrorLog,
    ImportRejected,
    JudgementBlock,
    LineError,
    Note,
    Skip,
    Vocabulary,
)
from judgements.models import Document, Query, ResultList
from judgements.roles import Role
from judgements.staging import copy_value

IMPORT_BATCH = 20_000
CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class ImportResult:
    """What an import did. ``skipped`` counts lines left out on purpose, by reason;
    ``notes`` are sentences for the user (how the file was read, what was created)."""

    rows: int
    created: int
    updated: int = 0
    import_id: uuid.UUID | None = None
    rater: str = ""
    result_list: ResultList | None = None
    skipped: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def upload_chunks(upload) -> Iterator[bytes]:
    """The upload as byte chunks, from a path, a binary file or an iterable of chunks."""
    if isinstance(upload, str | os.PathLike):
        with open(upload, "rb") as file:
            yield from iter(lambda: file.read(CHUNK_BYTES), b"")
    elif hasattr(upload, "read"):
        yield from iter(lambda: upload.read(CHUNK_BYTES), b"")
    else:
        yield from upload


class Summary:
    """Counts skipped lines and gathers notes while the rows pass to the writer."""

    def __init__(self):
        self.skipped, self.notes = Counter(), []

    def rows(self, items) -> Iterator:
        for item in items:
            if isinstance(item, Skip):
                self.skipped[item.reason] += 1
            elif isinstance(item, Note):
                self.notes.append(item.message)
            else:
                yield item

    def result(self, **fields) -> ImportResult:
        return ImportResult(skipped=dict(self.skipped), notes=self.notes, **fields)


def parse(upload, target: str, file_format: str, vocabulary: Vocabulary | None = None):
    return importers.formats_for(target)[file_format].parse(upload_chunks(upload), vocabulary)


def documents_copy(project, vocabulary: Vocabulary, rows: list[DocumentRow]) -> int:
    """Create documents with COPY (a run's hits bring thousands of new ones; the ORM
    takes most of an import's time building them) and note their ids."""
    if not rows:
        return 0
    first = bulk.reserve_ids(Document, len(rows))
    lines = "".join(
        f"{first + offset}\t{project.pk}\t{copy_value(row.external_id)}\t"
        f"{copy_value(row.title)}\t{copy_value(row.url)}\t{copy_value(row.snippet)}\t"
        f"{copy_value(row.image_url)}\t{copy_value(json.dumps(row.fields or {}))}\n"
        for offset, row in enumerate(rows)
    )
    columns = "id, project_id, external_id, title, url, snippet, image_url, fields"
    with connection.cursor() as cursor:
        sql = f"COPY {Document._meta.db_table} ({columns}) FROM STDIN"
        cursor.cursor.copy_expert(sql, io.StringIO(lines))
    for offset, row in enumerate(rows):
        vocabulary.documents[row.external_id] = first + offset
    return len(rows)


def add_queries(project, vocabulary: Vocabulary, rows, spec) -> int:
    """Create the queries that rows name by key (``create_missing``); a key is the
    external id and text (formats naming queries by id) or the text, with the file's
    own id as the external id where the row carries one (``query_external_id``)."""
    keys = {row.query_key for row in rows if row.query_id is None and row.query_key}
    keys -= set(vocabulary.qids)
    by_id = spec.queries_by == "id"
    external = {} if by_id else _external_ids(rows, keys, vocabulary)
    created = Query.objects.bulk_create(
        [
            Query(project=project, text=key, external_id=key if by_id else external.get(key, ""))
            for key in sorted(keys)
        ]
    )
    for query in created:
        vocabulary.qids[query.text] = query.pk
        vocabulary.queries[query.text] = query.pk
        if query.external_id:
            vocabulary.qids[query.external_id] = query.pk
    return len(created)


def _external_ids(rows, keys: set[str], vocabulary: Vocabulary) -> dict[str, str]:
    """The file's id for each text to create, where the rows give one no query holds."""
    external: dict[str, str] = {}
    for row in rows:
        qid = getattr(row, "query_external_id", "")
        if row.query_key in keys and qid and qid not in vocabulary.qids:
            external.setdefault(row.query_key, qid)
    return external


def add_documents_by_key(project, vocabulary: Vocabulary, rows) -> int:
    keys = {row.document_key for row in rows if row.document_id is None and row.document_key}
    keys -= set(vocabulary.documents)
    return documents_copy(project, vocabulary, [DocumentRow(0, key) for key in sorted(keys)])


def created_notes(created: Counter, accounts: list[str] = ()) -> list[str]:
    notes = []
    if created["documents"]:
        notes.append(f"Created {created['documents']:,} documents the project lacked (id only).")
    if created["queries"]:
        notes.append(
            f"Created {created['queries']:,} queries the project lacked (the id as text)."
        )
    if created["raters"]:
        notes.append(f"Created {created['raters']:,} rater accounts ({', '.join(accounts[:10])}).")
    return notes


def vocabulary_for(project, *, query_map=None, documents=False, raters=False) -> Vocabulary:
    rows = list(project.queries.values_list("text", "id", "external_id"))
    queries = {text: pk for text, pk, _ in rows}
    # As in exports, a query without an external id is named by its database id.
    qids = {str(pk): pk for _, pk, key in rows if not key}
    qids.update((key, pk) for _, pk, key in rows if key)
    if query_map is not None:
        qids = {key: queries[text] for key, text in _query_keys(query_map) if text in queries}
    return Vocabulary(
        grades=frozenset(project.grade_values),
        queries=queries,
        qids=qids,
        documents=dict(project.documents.values_list("external_id", "id")) if documents else {},
        raters=_raters() if raters else {},
        users=frozenset(User.objects.values_list("username", flat=True))
        if raters
        else frozenset(),
    )


def _raters() -> dict[str, int]:
    """Active users holding the rater role (or one that includes it), by username."""
    groups = [role.value for role in (Role.RATER, Role.ANALYST, Role.ADMIN)]
    active = User.objects.filter(is_active=True)
    users = active.filter(groups__name__in=groups) | active.filter(is_superuser=True)
    return dict(users.distinct().values_list("username", "id"))


def _query_keys(upload) -> list[tuple[str, str]]:
    """(id, text) pairs of a queries CSV that maps a TREC file's qids to queries."""
    errors, keys = ErrorLog(), []
    for item in importers.queries_csv(upload_chunks(upload)):
        if isinstance(item, LineError):
            errors.add(item._replace(message=f"In the queries file: {item.message}"))
        elif not isinstance(item, Skip | Note) and item.key:
            keys.append((item.key, item.text))
    errors.raise_if_any()
    return keys


def import_rows(items, write) -> int:
    """Hand rows (and JudgementBlocks) to ``write`` in batches until an error shows;
    return how many rows came."""
    errors, rows, count, refused, batch = ErrorLog(), [], 0, None, IMPORT_BATCH
    pending = 0
    for item in items:
        if isinstance(item, LineError):
            errors.add(item)
            continue
        size = len(item) if isinstance(item, JudgementBlock) else 1
        count += size
        if not errors and refused is None:
            rows.append(item)
            pending += size
            if pending >= batch:
                refused, rows, pending = _write_batch(write, rows), [], 0
    if not errors and refused is None and rows:
        refused = _write_batch(write, rows)
    errors.raise_if_any()
    if refused is not None:
        raise ImportRejected([LineError(None, None, f"The database refused a row: {refused}")], 1)
    return count


def _write_batch(write, rows) -> str | None:
    """Write one batch; a constraint violation ends the writing, not the parsing.

    A repeated row breaks a unique constraint before the parser, which reports repeats
    at the end of the file, can name its line; the savepoint lets parsing go on to
    that report. Returns the database's message if the batch was refused.
    """
    try:
        with transaction.atomic():
            write(rows)
    except (IntegrityError, DataError) as error:
        return str(error).splitlines()[0]
    return None
