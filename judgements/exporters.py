"""Exports streamed straight out of PostgreSQL: one COPY, piped through in blocks.

An export is one ``COPY (SELECT ...) TO STDOUT`` that PostgreSQL formats. A
helper thread runs it on the request's own connection (so it sees what the
request sees, in one snapshot) and hands its output over in blocks through a
short queue, so the server holds a few blocks however long the export. Python
never builds a row.

Datasets: ``events`` (the log), ``grades`` (each rater's current grade per pair)
and ``consensus`` (one row per judged pair). Formats:

- ``jsonl`` and ``csv``: every column of the dataset.
- ``qrels``: ``qid 0 docid grade``; ``quepid``: CSV ``query,docid,rating``;
  ``ltr``: ``grade qid:N # docid query``; ``rre``: RRE ratings JSON with
  ``query_groups`` and ``{docid: {"gain": grade}}``; ``opensearch``: an OpenSearch
  Search Relevance Workbench judgment list (``IMPORT_JUDGMENT``). These hold one
  grade per pair, so whatever the dataset they write each pair's consensus of the
  filtered events (the file is named ``-consensus``), rounded to the nearest grade
  (halves up). A query id (``qid``) is the query's external id, or its database id
  when it has none.
- result lists: ``trec`` run files, ``qid Q0 docid rank score tag``.

CSV cells (``csv``, ``quepid``) that start with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return get a ``'`` in front, so that a spreadsheet does not run them as a
formula (OWASP's rule for CSV injection); the importers take it off again. ``raw``
writes them as they are.

Rows come ordered by query id, then by event id (``events``) or by document id
and rater (the others).
"""

import json
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import QuerySet

from judgements.models import Hit, Project, ResultList

BLOCK_BYTES = 256 << 10
QUEUE_BLOCKS = 8
FORMATS = ("jsonl", "csv", "qrels", "quepid", "rre", "ltr", "opensearch")
# Formats with one grade per pair: they write the consensus, whatever the dataset.
PAIR_FORMATS = ("qrels", "quepid", "rre", "ltr", "opensearch")
DATASETS = ("events", "grades", "consensus")
CONTENT_TYPES = {
    "jsonl": "application/x-ndjson",
    "csv": "text/csv",
    "qrels": "text/plain",
    "quepid": "text/csv",
    "rre": "application/json",
    "ltr": "text/plain",
    "opensearch": "application/json",
    "trec": "text/plain",
}
EXTENSIONS = {"quepid": "csv", "rre": "json", "ltr": "txt", "trec": "run", "opensearch": "json"}
# CSV mode with a delimiter and quote character that never occur passes each
# line through untouched (text mode would double every backslash of JSON).
AS_IS = "FORMAT csv, DELIMITER E'\\x02', QUOTE E'\\x01'"
AS_CSV = "FORMAT csv"
ISO_TIME = """to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')"""
NAMES_JOIN = """
JOIN judgements_query q ON q.id = r.query_id
JOIN judgements_document d ON d.id = r.document_id"""
# The qid a file names a query by: its external id, else its database id.
QID = "COALESCE(NULLIF(q.external_id, ''), q.id::text)"
# OWASP's CSV-injection rule, reversibly: one more quote before any run of quotes
# that leads to a formula character.
SAFE_CELL = "CASE WHEN {0} ~ '^''*[-=+@\\t\\r]' THEN '''' || {0} ELSE {0} END"
TEXT_COLUMNS = ("query", "document", "rater", "note")


@dataclass(frozen=True)
class Export:
    filename: str
    content_type: str
    chunks: Iterator[bytes]


@dataclass(frozen=True)
class _Dataset:
    columns: tuple[str, ...]
    order: str
    grade: str  # SQL for the one grade a pair format writes, NULL to leave a row out
    hidden: tuple[str, ...] = ()  # columns of rows_sql() used for ordering only

    def rows_sql(self, events: QuerySet, policy: str) -> str:
        raise NotImplementedError


class _Events(_Dataset):
    def rows_sql(self, events, policy):
        inner = events.order_by().values(
            "id", "query_id", "document_id", "rater_id", "kind", "grade", "note",
            "created_at", "source", "import_id",
        )  # fmt: skip
        return f"""
            SELECT r.id, r.query_id, {QID} AS qid, q.text AS query, d.external_id AS document,
                   u.{_username()} AS rater, r.kind, r.grade, r.note,
                   {ISO_TIME.format("r.created_at")} AS created_at, r.source, r.import_id
            FROM ({sql_of(inner)}) r {NAMES_JOIN}
            JOIN {_user_table()} u ON u.id = r.rater_id"""


class _Grades(_Dataset):
    def rows_sql(self, events, policy):
        inner = events.current_grades().order_by()
        inner = inner.values("query_id", "document_id", "rater_id", "grade", "created_at")
        return f"""
            SELECT r.query_id, {QID} AS qid, q.text AS query, d.external_id AS document,
                   u.{_username()} AS rater, r.grade,
                   {ISO_TIME.format("r.created_at")} AS created_at, r.document_id, r.rater_id
            FROM ({sql_of(inner)}) r {NAMES_JOIN}
            JOIN {_user_table()} u ON u.id = r.rater_id"""


class _Consensus(_Dataset):
    def rows_sql(self, events, policy):
        return f"""
            SELECT r.query_id, {QID} AS qid, q.text AS query, d.external_id AS document,
                   r.consensus::float8 AS consensus, r.raters, r.min_grade, r.max_grade,
                   r.spread::float8 AS spread, r.document_id
            FROM ({events.consensus(policy).sql()}) r {NAMES_JOIN}"""


DATASET = {
    "events": _Events(
        (
            "id",
            "query_id",
            "qid",
            "query",
            "document",
            "rater",
            "kind",
            "grade",
            "note",
            "created_at",
            "source",
            "import_id",
        ),
        order="r.query_id, r.id",
        grade="CASE WHEN r.kind = 'grade' THEN r.grade END",
    ),
    "grades": _Grades(
        ("query_id", "qid", "query", "document", "rater", "grade", "created_at"),
        order="r.query_id, r.document_id, r.rater_id",
        grade="r.grade",
        hidden=("document_id", "rater_id"),
    ),
    "consensus": _Consensus(
        (
            "query_id",
            "qid",
            "query",
            "document",
            "consensus",
            "raters",
            "min_grade",
            "max_grade",
            "spread",
        ),
        order="r.query_id, r.document_id",
        grade="floor(r.consensus + 0.5)::int",
        hidden=("document_id",),
    ),
}


def judgement_export(
    *,
    project: Project,
    events: QuerySet,
    dataset: str,
    file_format: str,
    policy: str = "",
    raw: bool = False,
) -> Export:
    """Stream ``dataset`` of the judgement events in ``events`` as ``file_format``.

    ``events`` may be filtered in any way (rater, source, time): grades and consensus
    are derived from the events that pass the filter. Pair formats write the
    consensus whatever ``dataset`` says; ``raw`` leaves CSV cells unguarded.
    """
    if file_format in PAIR_FORMATS:
        dataset = "consensus"
    shape, policy = DATASET[dataset], policy or project.consensus
    rows = shape.rows_sql(events, policy)
    if file_format in ("csv", "quepid") and not raw:
        rows = _guarded(rows, shape)
    sql = _format_sql(shape, file_format).format(rows=rows)
    options = AS_CSV if file_format in ("csv", "quepid") else AS_IS
    head, tail = _framing(project, shape, file_format, policy)
    filename = f"{project.slug}-{dataset}.{EXTENSIONS.get(file_format, file_format)}"
    return Export(filename, CONTENT_TYPES[file_format], _framed(head, sql, options, tail))


def _guarded(rows: str, shape: _Dataset) -> str:
    """The rows with their text cells made safe for spreadsheets (see the module doc)."""
    columns = [
        f"{SAFE_CELL.format('g.' + name)} AS {name}" if name in TEXT_COLUMNS else f"g.{name}"
        for name in (*shape.columns, *shape.hidden)
    ]
    return f"SELECT {', '.join(columns)} FROM ({rows}) g"


def _framed(head: bytes, sql: str, options: str, tail: bytes) -> Iterator[bytes]:
    yield head
    yield from piped_copy(sql, options)
    yield tail


def _format_sql(shape: _Dataset, file_format: str) -> str:
    """The SELECT around a dataset's rows (``{rows}``) that writes one format's lines."""
    columns = ", ".join(f"r.{column}" for column in shape.columns)
    pairs = f"FROM ({{rows}}) r WHERE ({shape.grade}) IS NOT NULL"
    grade = f"({shape.grade})"
    return {
        "jsonl": f"SELECT row_to_json(j)::text FROM (SELECT {columns} FROM ({{rows}}) r "
        f"ORDER BY {shape.order}) j",
        "csv": f"SELECT {columns} FROM ({{rows}}) r ORDER BY {shape.order}",
        "qrels": f"SELECT r.qid || ' 0 ' || r.document || ' ' || {grade} {pairs} "
        f"ORDER BY {shape.order}",
        "quepid": f"SELECT r.query, r.document, {grade} {pairs} ORDER BY {shape.order}",
        "ltr": f"SELECT {grade} || ' qid:' || r.qid || ' # ' || r.document || ' ' || "
        f"translate(r.query, E'\\n\\r\\t', '   ') {pairs} ORDER BY {shape.order}",
        # A comma before every group but the first makes the lines one JSON list.
        "rre": "SELECT CASE WHEN row_number() OVER (ORDER BY r.query_id) > 1 THEN ',' "
        "ELSE '' END || json_build_object('name', r.query, 'queries', json_build_array("
        "json_build_object('template', 'query.json', 'placeholders', "
        "json_build_object('$query', r.query))), 'relevant_documents', "
        f"json_object_agg(r.document, json_build_object('gain', {grade}) ORDER BY {shape.order})"
        f")::text {pairs} "
        "GROUP BY r.query_id, r.query ORDER BY r.query_id",
        "opensearch": "SELECT CASE WHEN row_number() OVER (ORDER BY r.query_id) > 1 THEN ',' "
        "ELSE '' END || json_build_object('query', r.query, 'ratings', json_agg("
        f"json_build_object('docId', r.document, 'rating', to_char({grade}, 'FM9999990.000')) "
        f"ORDER BY {shape.order}))::text {pairs} GROUP BY r.query_id, r.query ORDER BY r.query_id",
    }[file_format]


def _framing(project, shape: _Dataset, file_format: str, policy: str) -> tuple[bytes, bytes]:
    """What comes before and after the rows: a header line or a JSON envelope."""
    if file_format == "csv":
        return ",".join(shape.columns).encode() + b"\n", b""
    if file_format == "quepid":
        return b"query,docid,rating\n", b""
    if file_format == "rre":
        index, ratings = json.dumps(project.slug), json.dumps(f"{policy} consensus")
        head = f'{{"index": {index}, "id_field": "id", "ratings": {ratings}, "query_groups": [\n'
        return head.encode(), b"]}\n"
    if file_format == "opensearch":
        head = {
            "name": f"{project.name} ({policy} consensus)",
            "description": f"Exported from Relevance Judge ({project.slug}), {policy} consensus.",
            "type": "IMPORT_JUDGMENT",
        }
        return json.dumps(head)[:-1].encode() + b', "judgmentRatings": [\n', b"]}\n"
    return b"", b""


def result_list_export(*, result_list: ResultList) -> Export:
    """Stream a result list as a TREC run file; a hit with no score gets minus its rank."""
    hits = Hit.objects.filter(result_list=result_list).order_by()
    tag = _literal("_".join(result_list.name.split()) or f"run{result_list.pk}")
    sql = f"""
        SELECT {QID} || ' Q0 ' || d.external_id || ' ' || r.rank || ' '
               || COALESCE(r.score, -r.rank) || ' ' || {tag}
        FROM ({sql_of(hits.values("query_id", "document_id", "rank", "score"))}) r
        JOIN judgements_document d ON d.id = r.document_id
        JOIN judgements_query q ON q.id = r.query_id
        ORDER BY r.query_id, r.rank"""
    filename = f"{result_list.project.slug}-{'_'.join(result_list.name.split())}.run"
    return Export(filename, CONTENT_TYPES["trec"], piped_copy(sql, AS_IS))


def piped_copy(sql: str, options: str) -> Iterator[bytes]:
    """The output of ``COPY (sql) TO STDOUT`` in blocks, as it comes.

    psycopg2 pushes COPY output into a file object until the end, so a helper
    thread runs the COPY and the blocks come back through a queue of a few
    blocks, which also holds the COPY back while the client reads slowly. The
    thread uses this thread's connection (psycopg2 connections may be shared,
    one cursor each), which is otherwise idle while the response streams.
    """
    connection.ensure_connection()
    pipe = _Pipe(connection.connection, f"COPY ({sql}) TO STDOUT WITH ({options})")
    pipe.start()
    try:
        while (block := pipe.blocks.get()) is not _Pipe.END:
            if isinstance(block, BaseException):
                raise block
            yield block
    finally:
        # A client that hung up stops the reading: the COPY runs to its end
        # without keeping what it writes, which leaves the connection usable.
        pipe.stopped = True
        pipe.join()


class _Pipe(threading.Thread):
    END = object()

    def __init__(self, database, statement: str):
        super().__init__(daemon=True)
        self.database, self.statement = database, statement
        self.blocks = queue.Queue(maxsize=QUEUE_BLOCKS)
        self.buffer, self.stopped = bytearray(), False

    def run(self) -> None:
        try:
            with self.database.cursor() as cursor:
                cursor.copy_expert(self.statement, self)
            if self.buffer:
                self._hand_over(bytes(self.buffer))
            self._hand_over(self.END)
        except BaseException as error:
            self._hand_over(error)

    def write(self, data) -> int:
        # Called by psycopg2 with every row.
        if not self.stopped:
            self.buffer += data
            if len(self.buffer) >= BLOCK_BYTES:
                self._hand_over(bytes(self.buffer))
                self.buffer.clear()
        return len(data)

    def _hand_over(self, item) -> None:
        while not self.stopped:
            try:
                self.blocks.put(item, timeout=0.1)
                return
            except queue.Full:
                continue


def sql_of(queryset: QuerySet) -> str:
    """The SQL of ``queryset`` with its parameters quoted in, as COPY cannot take any."""
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        return cursor.cursor.mogrify(sql, params).decode()


def _literal(value: str) -> str:
    with connection.cursor() as cursor:
        return cursor.cursor.mogrify("%s", [value]).decode()


def _user_table() -> str:
    return connection.ops.quote_name(get_user_model()._meta.db_table)


def _username() -> str:
    return connection.ops.quote_name(get_user_model().USERNAME_FIELD)
