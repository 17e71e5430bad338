"""Importing a result list (a TREC run, JSON, and the other run formats): its hits,
ranked as trec_eval ranks them, and the documents and queries it names."""

from collections import Counter
from collections.abc import Iterable
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from judgements import importers
from judgements.importers import DocumentRow, HitRow, ImportRejected, LineError, RunInfo
from judgements.imports.common import (
    ImportResult,
    Summary,
    add_queries,
    created_notes,
    documents_copy,
    import_rows,
    upload_chunks,
    vocabulary_for,
)
from judgements.models import Hit, Project, ResultList
from judgements.staging import Staging, copy_value
from metrics.refresh import metrics_schedule_refresh


@transaction.atomic
def result_list_import(
    *,
    project: Project,
    upload,
    file_format: str,
    uploaded_by=None,
    name: str = "",
    engine: str = "",
    captured_at: datetime | None = None,
    query_map=None,
    create_missing: bool = False,
) -> ImportResult:
    """Create a result list from a TREC run or JSON upload; all or nothing.

    Name, engine and capture time come from the arguments, else from the file (the
    TREC tag; the JSON's fields), else the time is now. Documents the project lacks
    are created from the hit (TREC: the id alone). A TREC ``qid`` is a query's
    external id, or the id a ``query_map`` (a queries CSV with ``id,text``) gives it.
    With ``create_missing``, unknown qids become queries with the qid as text.

    A TREC run's hits are ranked as trec_eval ranks them: score descending, ties by
    document id descending, whatever the rank column says; JSON keeps its list order.
    """
    spec = importers.RESULT_LIST_FORMATS[file_format]
    vocabulary = vocabulary_for(project, query_map=query_map, documents=True)
    vocabulary.create_missing = create_missing
    writer = _HitWriter(project, vocabulary, RunInfo(name, engine, captured_at), uploaded_by, spec)
    return _import(writer, spec.parse(upload_chunks(upload), vocabulary))


@transaction.atomic
def result_list_import_hits(
    *,
    project: Project,
    hits: Iterable[HitRow | LineError],
    name: str,
    engine: str = "",
    captured_at: datetime | None = None,
    uploaded_by=None,
) -> ImportResult:
    """Create a result list from hits read already (a capture's, from the engine's
    answers), kept in their order as a JSON upload's are; all or nothing.

    Each hit names an existing query by ``query_id``; documents the project lacks are
    created from the hit's ``document``, else with the id alone. A ``LineError`` among
    the hits rejects the list, as a line of an upload would.
    """
    spec = importers.RESULT_LIST_FORMATS["json"]
    vocabulary = vocabulary_for(project, documents=True)
    writer = _HitWriter(project, vocabulary, RunInfo(name, engine, captured_at), uploaded_by, spec)
    return _import(writer, hits)


def _import(writer: "_HitWriter", items) -> ImportResult:
    summary = Summary()
    rows = import_rows(writer.take_info(summary.rows(items)), writer.write)
    if writer.result_list is None:
        raise ImportRejected([LineError(None, None, "The file has no hits.")], 1)
    summary.notes += writer.finish()
    metrics_schedule_refresh(project_id=writer.project.pk, query_ids=sorted(writer.query_ids))
    return summary.result(rows=rows, created=rows, result_list=writer.result_list)


HIT_COLUMNS = {
    "result_list_id": "bigint",
    "query_id": "bigint",
    "document_id": "bigint",
    "file_rank": "bigint",
    "score": "double precision",
    "docid": 'text COLLATE "C"',
    "line": "integer",
}
# trec_eval's order (form_res_rels.c, comp_sim_docno): score descending as a double,
# ties by docno descending byte by byte (strcmp); text in the "C" collation compares
# UTF-8 bytes the same way.
RANK_ORDER = {
    "trec_eval": "score DESC, docid DESC",
    "file": "file_rank, line",
}
FILE_ORDER = "file_rank NULLS LAST, line"
TREC_ORDER = RANK_ORDER["trec_eval"]


class _HitWriter:
    def __init__(self, project, vocabulary, given: RunInfo, uploaded_by, spec):
        self.project, self.vocabulary, self.uploaded_by = project, vocabulary, uploaded_by
        self.given, self.found, self.result_list, self.query_ids = given, RunInfo(), None, set()
        self.spec, self.created = spec, Counter()
        self.staging = Staging(Hit, HIT_COLUMNS)

    def take_info(self, items):
        for item in items:
            if isinstance(item, RunInfo):
                self.found = item
            else:
                yield item

    def write(self, rows) -> None:
        if self.result_list is None:
            self.result_list = self._create()
        self._add_documents(rows)
        self.created["queries"] += add_queries(self.project, self.vocabulary, rows, self.spec)
        documents, queries = self.vocabulary.documents, self.vocabulary.qids
        run = self.result_list.pk
        query_ids = [row.query_id or queries[row.query_key] for row in rows]
        self.query_ids.update(query_ids)
        self.staging.copy(
            f"{run}\t{query}\t{documents[row.external_id]}\t{copy_value(row.rank)}\t"
            f"{copy_value(row.score)}\t{copy_value(row.external_id)}\t{row.line}\n"
            for query, row in zip(query_ids, rows, strict=True)
        )

    def finish(self) -> list[str]:
        """Write the hits, ranked; return the notes for the summary."""
        order = RANK_ORDER[self.spec.order]
        self.staging.insert(
            ["result_list_id", "query_id", "document_id", "rank", "score"],
            f"SELECT result_list_id, query_id, document_id,"
            f" row_number() OVER (PARTITION BY query_id ORDER BY {order}), score"
            f" FROM {self.staging.table} ORDER BY query_id, 4",
        )
        notes = created_notes(self.created)
        return notes + (self._order_notes() if self.spec.order == "trec_eval" else [])

    def _order_notes(self) -> list[str]:
        with connection.cursor() as cursor:
            cursor.execute(
                f"""SELECT count(*) FILTER (WHERE tied), count(*) FILTER (WHERE NOT tied)
                FROM (SELECT bool_or(same > 1) AS tied FROM (
                    SELECT query_id, count(*) OVER (PARTITION BY query_id, score) AS same,
                      row_number() OVER (PARTITION BY query_id ORDER BY {TREC_ORDER}) AS trec,
                      row_number() OVER (PARTITION BY query_id ORDER BY {FILE_ORDER}) AS own
                    FROM {self.staging.table}) ranked
                  GROUP BY query_id HAVING bool_or(trec <> own)) queries"""
            )
            tied, reordered = cursor.fetchone()
        notes = []
        if tied:
            notes.append(
                f"{tied:,} queries have tied scores; hits ordered as trec_eval orders them "
                "(score, then document id, both descending); upload JSON to keep your own ranks."
            )
        if reordered:
            notes.append(
                f"{reordered:,} queries' rank column disagrees with their scores; hits ordered "
                "by score, as trec_eval does; upload JSON to keep your own ranks."
            )
        return notes

    def _create(self) -> ResultList:
        name, engine = self.given.name or self.found.name, self.given.engine or self.found.engine
        if not name or len(name) > 200:
            message = "The result list needs a name of at most 200 characters."
            raise ImportRejected([LineError(None, "name", message)], 1)
        if self.project.result_lists.filter(name=name).exists():
            message = f'The project has a result list named "{name}" already.'
            raise ImportRejected([LineError(None, "name", message)], 1)
        return ResultList.objects.create(
            project=self.project,
            name=name,
            engine=engine[:200],
            captured_at=self.given.captured_at or self.found.captured_at or timezone.now(),
            created_by=self.uploaded_by,
        )

    def _add_documents(self, rows) -> None:
        missing = {}
        for row in rows:
            if row.external_id not in self.vocabulary.documents:
                missing.setdefault(
                    row.external_id, row.document or DocumentRow(0, row.external_id)
                )
        documents_copy(self.project, self.vocabulary, list(missing.values()))
