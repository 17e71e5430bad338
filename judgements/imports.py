"""Import services: an upload's rows written all or nothing, with a summary.

A parser (``judgements.importers``) turns an upload into rows, skips and
line-numbered errors. Rows are written in batches as they come; the first error
stops the writing while parsing goes on, to report every error at once; raising
ImportRejected at the end rolls back what was written. So an import is all or
nothing, and memory stays flat for a file of any length.

Every service takes plain arguments (a project, the upload as a path, a binary file
or byte chunks, and options), so that a background task can call it as a request
does.
"""

import io
import json
import os
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth.models import Group, User
from django.db import DataError, IntegrityError, connection, transaction
from django.db.models.functions import Lower
from django.utils import timezone

from judgements import bulk, importers
from judgements.importers import (
    DocumentRow,
    ErrorLog,
    ImportRejected,
    LineError,
    Note,
    RunInfo,
    Skip,
    Vocabulary,
)
from judgements.models import Document, Hit, Judgement, Project, Query, ResultList
from judgements.roles import Role
from metrics.services import metrics_schedule_refresh

IMPORT_BATCH = 20_000
CHUNK_BYTES = 1 << 20
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


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


class _Summary:
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

    summary = _Summary()
    rows = _import_rows(summary.rows(_parse(upload, "queries", file_format)), write)
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

    summary = _Summary()
    rows = _import_rows(summary.rows(_parse(upload, "documents", "jsonl")), write)
    return summary.result(rows=rows, created=created, updated=rows - created)


def _parse(upload, target: str, file_format: str, vocabulary: Vocabulary | None = None):
    return importers.formats_for(target)[file_format].parse(upload_chunks(upload), vocabulary)


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
    vocabulary = _vocabulary(project, query_map=query_map, documents=True)
    vocabulary.create_missing = create_missing
    writer = _HitWriter(project, vocabulary, RunInfo(name, engine, captured_at), uploaded_by, spec)
    summary = _Summary()
    parsed = summary.rows(spec.parse(upload_chunks(upload), vocabulary))
    rows = _import_rows(writer.take_info(parsed), writer.write)
    if writer.result_list is None:
        raise ImportRejected([LineError(None, None, "The file has no hits.")], 1)
    summary.notes += writer.finish()
    metrics_schedule_refresh(project_id=project.pk, query_ids=sorted(writer.query_ids))
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
        self.staging = _Staging(Hit, HIT_COLUMNS)

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
        self.created["queries"] += _add_queries(self.project, self.vocabulary, rows, self.spec)
        documents, queries = self.vocabulary.documents, self.vocabulary.qids
        run = self.result_list.pk
        query_ids = [row.query_id or queries[row.query_key] for row in rows]
        self.query_ids.update(query_ids)
        self.staging.copy(
            f"{run}\t{query}\t{documents[row.external_id]}\t{_copy_value(row.rank)}\t"
            f"{_copy_value(row.score)}\t{_copy_value(row.external_id)}\t{row.line}\n"
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
        notes = _created_notes(self.created)
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
        _documents_copy(self.project, self.vocabulary, list(missing.values()))


def _documents_copy(project, vocabulary: Vocabulary, rows: list[DocumentRow]) -> int:
    """Create documents with COPY (a run's hits bring thousands of new ones; the ORM
    takes most of an import's time building them) and note their ids."""
    if not rows:
        return 0
    first = bulk.reserve_ids(Document, len(rows))
    lines = "".join(
        f"{first + offset}\t{project.pk}\t{_copy_value(row.external_id)}\t"
        f"{_copy_value(row.title)}\t{_copy_value(row.url)}\t{_copy_value(row.snippet)}\t"
        f"{_copy_value(row.image_url)}\t{_copy_value(json.dumps(row.fields or {}))}\n"
        for offset, row in enumerate(rows)
    )
    columns = "id, project_id, external_id, title, url, snippet, image_url, fields"
    with connection.cursor() as cursor:
        sql = f"COPY {Document._meta.db_table} ({columns}) FROM STDIN"
        cursor.cursor.copy_expert(sql, io.StringIO(lines))
    for offset, row in enumerate(rows):
        vocabulary.documents[row.external_id] = first + offset
    return len(rows)


def _add_queries(project, vocabulary: Vocabulary, rows, spec) -> int:
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


def _add_documents_by_key(project, vocabulary: Vocabulary, rows) -> int:
    keys = {row.document_key for row in rows if row.document_id is None and row.document_key}
    keys -= set(vocabulary.documents)
    return _documents_copy(project, vocabulary, [DocumentRow(0, key) for key in sorted(keys)])


def _created_notes(created: Counter, accounts: list[str] = ()) -> list[str]:
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


@transaction.atomic
def judgement_import(
    *,
    project: Project,
    upload,
    file_format: str,
    uploaded_by,
    query_map=None,
    create_missing: bool = False,
) -> ImportResult:
    """Append the judgements of an upload as events with ``source=import``; all or nothing.

    All rows share one new ``import_id``. Formats with one grade per pair and no rater
    (Quepid CSV, qrels, RRE, LTR, OpenSearch) go to the project's import rater (see
    ``import_rater``), with a note naming the format and ``uploaded_by``. Event files
    name active raters (or the import rater) and keep their times, which may not be
    later than now; an event whose ``id`` the project has imported before, or equal
    to an event it holds already, is skipped, so sending a file twice adds nothing.
    A Quepid book's judgements go to rater accounts matched (or created) by e-mail.

    With ``create_missing``, documents (and qrels query ids) the project lacks are
    created instead of refused. A file with no judgement in it is refused.
    """
    spec = importers.JUDGEMENT_FORMATS[file_format]
    vocabulary = _vocabulary(
        project, query_map=query_map, documents=True, raters=spec.raters == "file"
    )
    vocabulary.create_missing = create_missing
    rater = import_rater(project) if spec.raters != "accounts" else None
    if spec.raters == "file":
        vocabulary.raters[rater.get_username()] = rater.pk
        rater = None
    uploader = uploaded_by.get_username() if uploaded_by else "a management command"
    note = f"Imported from {file_format} by {uploader}" if rater else ""
    writer = _JudgementWriter(project, vocabulary, spec, rater.pk if rater else None, note)
    summary = _Summary()
    rows = _import_rows(summary.rows(spec.parse(upload_chunks(upload), vocabulary)), writer.write)
    if not rows:
        raise ImportRejected([LineError(None, None, _nothing_message(summary.skipped))], 1)
    created = writer.finish()
    summary.notes += _created_notes(writer.created, writer.account_names)
    if skipped := rows - created:
        summary.skipped["already imported"] = skipped
    metrics_schedule_refresh(project_id=project.pk, query_ids=sorted(writer.query_ids))
    rater_name = rater.get_username() if rater else ""
    return summary.result(rows=rows, created=created, import_id=writer.import_id, rater=rater_name)


def _nothing_message(skipped: Counter) -> str:
    left_out = ", ".join(f"{count:,} {reason}" for reason, count in skipped.items())
    return "The file holds no judgements" + (f" (skipped: {left_out})." if left_out else ".")


JUDGEMENT_COLUMNS = {
    "query_id": "bigint",
    "document_id": "bigint",
    "rater_id": "integer",
    "kind": "varchar(16)",
    "grade": "smallint",
    "note": "text",
    "created_at": "timestamptz",
    "source": "varchar(16)",
    "import_id": "uuid",
    "source_event_id": "varchar(200)",
    "timed": "boolean",
}
# An event is imported once: by its id in the project, and (when the file dates it)
# by being equal to one the project holds.
NEW_EVENTS = """
SELECT {names} FROM {table} s
WHERE NOT EXISTS (
    SELECT FROM judgements_judgement j JOIN judgements_query q ON q.id = j.query_id
    WHERE s.source_event_id <> '' AND j.source_event_id <> '' AND q.project_id = %(project)s
      AND j.source_event_id = s.source_event_id)
  AND NOT (s.timed AND EXISTS (
    SELECT FROM judgements_judgement j
    WHERE j.query_id = s.query_id AND j.document_id = s.document_id
      AND j.rater_id = s.rater_id AND j.created_at = s.created_at AND j.kind = s.kind
      AND j.grade IS NOT DISTINCT FROM s.grade))
ORDER BY query_id, document_id"""
# Pair formats carry no event ids or times: every row is a new event.
ALL_EVENTS = "SELECT {names} FROM {table} ORDER BY query_id, document_id"


class _JudgementWriter:
    def __init__(self, project, vocabulary: Vocabulary, spec, rater_id: int | None, note: str):
        self.project, self.vocabulary, self.spec = project, vocabulary, spec
        self.rater_id, self.note, self.query_ids, self.created = rater_id, note, set(), Counter()
        self.import_id, self.now = uuid.uuid4(), timezone.now()
        self.accounts: dict[str, int] = {}
        self.account_names: list[str] = []
        self.staging = _Staging(Judgement, JUDGEMENT_COLUMNS)

    def write(self, rows) -> None:
        self.created["documents"] += _add_documents_by_key(self.project, self.vocabulary, rows)
        self.created["queries"] += _add_queries(self.project, self.vocabulary, rows, self.spec)
        if self.spec.raters == "accounts":
            self._add_accounts(rows)
        queries, documents = self.vocabulary.qids, self.vocabulary.documents
        resolved = [
            (
                row.query_id or queries[row.query_key],
                row.document_id or documents[row.document_key],
                row,
            )
            for row in rows
        ]
        self.query_ids.update(query for query, _, _ in resolved)
        # Formatting in Python is the slow part of an import: what every row shares
        # is formatted once per batch.
        fixed = f"{Judgement.Source.IMPORT.value}\t{self.import_id}"
        note, now = _copy_value(self.note), _copy_value(self.now)
        self.staging.copy(
            f"{query}\t{document}\t{self._rater(row)}\t{row.kind}\t"
            f"{_copy_value(row.grade)}\t{_copy_value(row.note) if row.note else note}\t"
            f"{_copy_value(row.created_at) if row.created_at else now}\t{fixed}\t"
            f"{_copy_value(row.event_id)}\t{'t' if row.created_at else 'f'}\n"
            for query, document, row in resolved
        )

    def _rater(self, row) -> int:
        return row.rater_id or (self.accounts[row.rater_key] if row.rater_key else self.rater_id)

    def finish(self) -> int:
        """Write the new events; return how many there were."""
        names = ", ".join(name for name in JUDGEMENT_COLUMNS if name != "timed")
        rows = ALL_EVENTS if self.spec.raters == "import" else NEW_EVENTS
        select = rows.format(names=names, table=self.staging.table)
        return self.staging.insert(names.split(", "), select, {"project": self.project.pk})

    def _add_accounts(self, rows) -> None:
        keys = {row.rater_key for row in rows if row.rater_key} - set(self.accounts)
        if not keys:
            return
        found = _accounts_for(keys)
        missing = sorted(keys - set(found))
        refused = [key for key, user in found.items() if not _may_rate(user)]
        if refused:
            message = f"These users are not active raters: {', '.join(refused[:10])}."
            raise ImportRejected([LineError(None, "user_email", message)], 1)
        for key in missing:
            found[key] = _account_create(key)
        self.accounts.update({key: user.pk for key, user in found.items()})
        self.created["raters"] += len(missing)
        self.account_names += missing


def _accounts_for(keys: set[str]) -> dict[str, User]:
    """Users whose e-mail (or, for keys without @, username) is one of ``keys``."""
    users = User.objects.annotate(lower_email=Lower("email"), lower_name=Lower("username"))
    found = {}
    for user in users.filter(lower_email__in=keys).prefetch_related("groups"):
        found.setdefault(user.lower_email, user)
    names = {_judge_username(key): key for key in keys if "@" not in key}
    for user in users.filter(lower_name__in=list(names)).prefetch_related("groups"):
        found.setdefault(names[user.lower_name], user)
    return found


def _may_rate(user) -> bool:
    from judgements.roles import can_rate

    return can_rate(user)


def _judge_username(key: str) -> str:
    return f"judge-{key}"[:150].lower()


def _account_create(key: str) -> User:
    """A rater account for a Quepid e-mail (or AI judge name): no usable password until
    an admin sets one."""
    username = key[:150] if "@" in key else _judge_username(key)
    while User.objects.filter(username__iexact=username).exists():
        username = f"{username[:140]}-{uuid.uuid4().hex[:6]}"
    user = User(username=username, email=key if "@" in key else "", is_active=True)
    user.set_unusable_password()
    user.save()
    user.groups.add(Group.objects.get(name=Role.RATER.value))
    return user


def import_rater(project: Project) -> User:
    """The user that imported judgements without a rater of their own are recorded under.

    One per project, so that an import counts as one more rater of each pair it grades
    (a second import of the same tool's grades replaces the first as that rater's
    current grades). It cannot log in and holds no role.
    """
    user, created = User.objects.get_or_create(
        username=f"import.{project.slug}",
        defaults={"first_name": "Imported", "last_name": project.name[:150], "is_active": False},
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def _vocabulary(project, *, query_map=None, documents=False, raters=False) -> Vocabulary:
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


def _import_rows(items, write) -> int:
    """Hand rows to ``write`` in batches until an error shows; return how many rows came."""
    errors, rows, count, refused, batch = ErrorLog(), [], 0, None, IMPORT_BATCH
    for item in items:
        if isinstance(item, LineError):
            errors.add(item)
            continue
        count += 1
        if not errors and refused is None:
            rows.append(item)
            if len(rows) >= batch:
                refused, rows = _write_batch(write, rows), []
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


class _Staging:
    """Rows COPY'd batch by batch into a temporary table, then written in one INSERT.

    The rating queue's triggers (migration 0004) lock the pool rows that a statement
    touches, in a fixed order. One INSERT for the whole import keeps to that order,
    where many batches, each locking its own rows, could deadlock against raters
    grading at the same time. The table is dropped when the transaction ends.
    """

    def __init__(self, model, columns: dict[str, str], *, order: str = ""):
        self.model, self.columns, self.order = model, columns, order
        self.table = f"import_{uuid.uuid4().hex}"
        self.empty = True

    def copy(self, lines: Iterable[str]) -> None:
        """Append rows given as lines of COPY's text format (see ``_copy_value``)."""
        with connection.cursor() as cursor:
            if self.empty:
                definition = ", ".join(f"{name} {kind}" for name, kind in self.columns.items())
                cursor.execute(f"CREATE TEMP TABLE {self.table} ({definition}) ON COMMIT DROP")
                self.empty = False
            text = io.StringIO("".join(lines))
            cursor.cursor.copy_expert(f"COPY {self.table} FROM STDIN", text)

    def insert(self, names: list[str], select: str, params: dict | None = None) -> int:
        """INSERT the model's ``names`` from ``select`` (over the staging table); return
        how many rows went in."""
        if self.empty:
            return 0
        with connection.cursor() as cursor:
            # Checking each row's foreign keys at commit costs more than the rest of the
            # import; every id was resolved in this transaction, and locking the rows
            # they point to (below) keeps them from being deleted until it commits.
            skipped = bulk.skip_foreign_key_checks()
            cursor.execute(
                f"INSERT INTO {self.model._meta.db_table} ({', '.join(names)}) {select}", params
            )
            inserted = cursor.rowcount
            if skipped:
                cursor.execute("SET LOCAL session_replication_role = origin")
                self._lock_referenced_rows(cursor)
        return inserted

    def _lock_referenced_rows(self, cursor) -> None:
        keys = [key for key in self.model._meta.fields if key.many_to_one]
        keys = [key for key in keys if key.column in self.columns]
        for column, parent in ((key.column, key.related_model) for key in keys):
            cursor.execute(
                f"SELECT (SELECT count(DISTINCT {column}) FROM {self.table}),"
                f" (SELECT count(*) FROM (SELECT FROM {parent._meta.db_table}"
                f"  WHERE id IN (SELECT {column} FROM {self.table}) FOR KEY SHARE) locked)"
            )
            wanted, locked = cursor.fetchone()
            if locked != wanted:
                message = f"A {parent._meta.verbose_name} was deleted during the import."
                raise ImportRejected([LineError(None, None, message)], 1)


def _copy_value(value) -> str:
    """A value in COPY's text format: \\N for NULL, tabs and line ends escaped."""
    if value is None:
        return "\\N"
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value).translate(_COPY_ESCAPES) if isinstance(value, str) else str(value)
