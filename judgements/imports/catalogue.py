"""Importing a project's catalogue: its queries (CSV, JSON) and documents (JSON Lines)."""

from collections import Counter

from django.db import transaction

from judgements.importers import DocumentRow, ImportRejected, LineError
from judgements.imports.common import ImportResult, Summary, import_rows, parse
from judgements.models import Document, Project, Query


@transaction.atomic
def query_import(*, project: Project, upload, file_format: str) -> ImportResult:
    """Add the queries of a CSV or JSON upload, keeping the file's ``id`` as each query's
    external id; queries the project has (by text) are left as they are, except that a
    known query without an id of its own (or with the one it was given by default,
    its database id) takes the file's.

    Raises ``ImportRejected`` listing every error by line, and writes nothing, if any
    row is bad.
    """
    known = {
        text: (pk, key)
        for text, pk, key in project.queries.values_list("text", "id", "external_id")
    }
    counts = Counter()

    def write(rows) -> None:
        new = [row for row in rows if row.text not in known]
        Query.objects.bulk_create(
            [
                Query(project=project, text=r.text, description=r.description, external_id=r.key)
                for r in new
            ]
        )
        counts["created"] += len(new)
        counts["updated"] += _queries_keyed(
            project, [row for row in rows if row.text in known], known
        )

    summary = Summary()
    rows = import_rows(summary.rows(parse(upload, "queries", file_format)), write)
    return summary.result(rows=rows, created=counts["created"], updated=counts["updated"])


def _queries_keyed(project, rows, known) -> int:
    """Give known queries the file's ids where they have none of their own yet."""
    changed = []
    for row in rows:
        pk, key = known[row.text]
        if row.key and key != row.key:
            if key not in ("", str(pk)):
                message = f'The query has the id "{key}" already; the file gives "{row.key}".'
                raise ImportRejected([LineError(row.line, "id", message)], 1)
            changed.append(Query(pk=pk, external_id=row.key))
    Query.objects.bulk_update(changed, ["external_id"])
    return len(changed)


@transaction.atomic
def document_import(*, project: Project, upload) -> ImportResult:
    """Add or update (by external id) the documents of a JSON Lines upload; all or nothing."""
    created = 0

    def write(rows) -> None:
        nonlocal created
        ids = [row.external_id for row in rows]
        existing = project.documents.filter(external_id__in=ids)
        known = set(existing.values_list("external_id", flat=True))
        created += len(ids) - len(known)
        Document.objects.bulk_create(
            [_document(project, row) for row in rows],
            update_conflicts=True,
            unique_fields=["project", "external_id"],
            update_fields=["title", "url", "snippet", "image_url", "fields"],
        )

    summary = Summary()
    rows = import_rows(summary.rows(parse(upload, "documents", "jsonl")), write)
    return summary.result(rows=rows, created=created, updated=rows - created)


def _document(project: Project, row: DocumentRow) -> Document:
    return Document(
        project=project,
        external_id=row.external_id,
        title=row.title,
        url=row.url,
        snippet=row.snippet,
        image_url=row.image_url,
        fields=row.fields or {},
    )
