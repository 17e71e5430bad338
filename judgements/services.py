"""Writes that span more than one check or row: recording grades, loading data."""

import datetime as dt
import io
import itertools
import uuid
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.db import DataError, IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from judgements import bulk, importers, loadgen, queue
from judgements.importers import (
    DocumentRow,
    ErrorLog,
    ImportRejected,
    LineError,
    RunInfo,
    Vocabulary,
)
from judgements.loadgen import LoadPlan
from judgements.models import Document, Hit, Judgement, Project, Query, ResultList
from judgements.roles import Role, can_rate
from metrics.services import metrics_schedule_refresh


@transaction.atomic
def judgement_record(
    *,
    rater,
    query: Query,
    document: Document,
    grade: int | None,
    kind: str = Judgement.Kind.GRADE,
    note: str = "",
    source: str = Judgement.Source.WEB,
    created_at: datetime | None = None,
) -> Judgement:
    """Append one judgement event after checking the rater, the pair and the grade.

    Raises ``ValidationError`` and writes nothing when the user may not rate, the
    document belongs to another project than the query, or the grade is outside the
    project's scale.
    """
    if not can_rate(rater):
        raise ValidationError({"rater": f"{rater.get_username()} does not have the rater role."})
    judgement = Judgement(
        query=query,
        document=document,
        rater=rater,
        kind=kind,
        grade=grade,
        note=note,
        source=source,
    )
    if created_at is not None:
        judgement.created_at = created_at
    judgement.full_clean()
    judgement.save()
    metrics_schedule_refresh(project_id=query.project_id, query_ids=[query.pk])
    return judgement


@transaction.atomic
def generated_project_create(*, plan: LoadPlan, slug: str, progress=None) -> Project:
    """Build a synthetic project of ``plan``'s size in one transaction, with COPY.

    An existing project with the same slug is replaced. ``progress`` is called with
    a short message after each stage.
    """
    say = progress or (lambda message: None)
    bulk.skip_foreign_key_checks()
    bulk.project_delete_fast(slug)
    project = Project.objects.create(
        name=f"Generated load ({plan.queries} queries, seed {plan.seed})",
        slug=slug,
        judges_per_pair=1,
    )
    rng = np.random.default_rng(plan.seed)
    grades = loadgen.true_grades(rng, plan)
    ranked = loadgen.rankings(rng, plan, grades)
    rater_ids = _generated_raters(plan)
    # Rebuilding indexes pays off only when the new rows outnumber the old ones.
    hit_count = plan.queries * plan.hits_per_query * plan.result_lists
    large = hit_count >= bulk.estimated_rows(Hit)
    with bulk.indexes_deferred(Query, Document, Hit, Judgement) if large else nullcontext():
        query_ids = _generated_queries(project, plan)
        document_ids = _generated_documents(project, plan)
        say(f"{plan.queries} queries and {plan.documents} documents")
        _generated_hits(project, plan, ranked, query_ids, document_ids)
        say(f"{ranked.size} hits in {plan.result_lists} result lists")
        events = loadgen.judgement_events(rng, plan, grades, ranked)
        _generated_judgements(plan, events, query_ids, document_ids, rater_ids)
        say(f"{plan.judgements} judgement events from {plan.raters} raters; indexing")
    return project


def _generated_judgements(plan, events, query_ids, document_ids, rater_ids) -> None:
    bulk.copy_columns(
        Judgement,
        {
            "id": bulk.reserve_ids(Judgement, plan.judgements) + np.arange(plan.judgements),
            "query_id": query_ids[events["query"]],
            "document_id": document_ids[events["query"], events["candidate"]],
            "rater_id": rater_ids[events["rater"]],
            "kind": np.full(plan.judgements, Judgement.Kind.GRADE.value),
            "grade": events["grade"],
            "note": np.full(plan.judgements, ""),
            "created_at": loadgen.timestamps(plan, events["seconds"]),
            "source": np.full(plan.judgements, Judgement.Source.GENERATED.value),
        },
    )


def _generated_queries(project: Project, plan: LoadPlan) -> np.ndarray:
    ids = bulk.reserve_ids(Query, plan.queries) + np.arange(plan.queries)
    numbers = np.char.zfill(np.arange(plan.queries).astype(str), 6)
    bulk.copy_columns(
        Query,
        {
            "id": ids,
            "project_id": np.full(plan.queries, project.pk),
            "text": np.char.add("synthetic query ", numbers),
            # As for queries stored before external ids (migration 0010): their own id.
            "external_id": ids,
            "description": np.full(plan.queries, ""),
            "created_at": np.full(plan.queries, project.created_at.isoformat()),
        },
    )
    return ids


def _generated_documents(project: Project, plan: LoadPlan) -> np.ndarray:
    """The shared catalogue; returns the document id of each (query, candidate)."""
    count = plan.documents
    ids = bulk.reserve_ids(Document, count) + np.arange(count)
    external = np.char.add("D", np.char.zfill(np.arange(count).astype(str), 9))
    bulk.copy_columns(
        Document,
        {
            "id": ids,
            "project_id": np.full(count, project.pk),
            "external_id": external,
            "title": np.char.add("Generated document ", external),
            "url": np.full(count, ""),
            "snippet": np.full(count, ""),
            "image_url": np.full(count, ""),
            "fields": np.full(count, "{}"),
        },
    )
    return ids[loadgen.candidate_documents(plan)]


def _generated_hits(project, plan, ranked, query_ids, document_ids) -> None:
    lists, queries, depth = ranked.shape
    for position in range(lists):
        result_list = ResultList.objects.create(
            project=project,
            name=f"generated list {position + 1}",
            engine=f"synthetic, quality {loadgen.LIST_QUALITIES[min(position, 3)]}",
            captured_at=plan.end - dt.timedelta(days=(lists - position) * plan.days // lists),
        )
        ranks = np.tile(np.arange(1, depth + 1), queries)
        bulk.copy_columns(
            Hit,
            {
                "result_list_id": np.full(queries * depth, result_list.pk),
                "query_id": np.repeat(query_ids, depth),
                "document_id": np.take_along_axis(document_ids, ranked[position], axis=1).ravel(),
                "rank": ranks,
                "score": np.round(1.0 / ranks, 6),
            },
        )


def _generated_raters(plan: LoadPlan) -> np.ndarray:
    group = Group.objects.get(name=Role.RATER.value)
    users = []
    for number in range(plan.raters):
        user, _ = User.objects.get_or_create(username=f"load_rater_{number:03d}")
        user.groups.add(group)
        users.append(user.pk)
    return np.array(users)


DEMO_PASSWORD = "relevance"


@transaction.atomic
def demo_load(*, data) -> dict[str, int]:
    """Write ``judgements.demo.build_demo()`` data; a second run adds nothing.

    Rows are matched on their natural keys (username, slug, query text, external id,
    result list name, and rater + pair + time for judgements). Returns how many rows
    of each kind were created.
    """
    created = {"users": _demo_users(data.users)}
    project, _ = Project.objects.get_or_create(slug=data.project["slug"], defaults=data.project)
    queries = {
        text: Query.objects.get_or_create(
            project=project, text=text, defaults={"description": description}
        )
        for text, description in data.queries
    }
    created["queries"] = sum(was_created for _, was_created in queries.values())
    queries = {text: query for text, (query, _) in queries.items()}
    documents, created["documents"] = _demo_documents(project, data.documents)
    created["hits"] = _demo_result_lists(project, data.result_lists, queries, documents)
    created["judgements"] = _demo_judgements(data.judgements, queries, documents)
    return created


def _demo_users(users: list[dict]) -> int:
    created = 0
    for spec in users:
        user, was_created = User.objects.get_or_create(
            username=spec["username"],
            defaults={
                "first_name": spec["first_name"],
                "email": f"{spec['username']}@example.org",
            },
        )
        if was_created:
            user.set_password(DEMO_PASSWORD)
            user.is_staff = user.is_superuser = spec["role"] == Role.ADMIN
            user.save()
            created += 1
        user.groups.add(Group.objects.get(name=spec["role"]))
    return created


def _demo_documents(project: Project, specs: list[dict]) -> tuple[dict[str, Document], int]:
    existing = {doc.external_id: doc for doc in project.documents.all()}
    missing = [
        Document(
            project=project,
            external_id=spec["external_id"],
            title=spec["title"],
            url=spec["url"],
            snippet=spec["snippet"],
            image_url=spec["image"] or "",
            fields=spec["fields"],
        )
        for spec in specs
        if spec["external_id"] not in existing
    ]
    for document in Document.objects.bulk_create(missing):
        existing[document.external_id] = document
    return existing, len(missing)


def _demo_result_lists(project, specs, queries, documents) -> int:
    created = 0
    for spec in specs:
        fields = {key: value for key, value in spec.items() if key != "hits"}
        result_list, was_created = ResultList.objects.get_or_create(
            project=project, name=spec["name"], defaults=fields
        )
        if not was_created:
            continue  # Written whole by an earlier run: the transaction saw to that.
        hits = [
            Hit(
                result_list=result_list,
                query=queries[text],
                document=documents[external_id],
                rank=rank,
                score=score,
            )
            for text, ranking in spec["hits"].items()
            for rank, (external_id, score) in enumerate(ranking, start=1)
        ]
        created += len(Hit.objects.bulk_create(hits))
    return created


def _demo_judgements(specs, queries, documents) -> int:
    raters = {user.username: user for user in User.objects.filter(username__startswith="rater_")}
    existing = set(
        Judgement.objects.filter(source=Judgement.Source.DEMO).values_list(
            "query_id", "document_id", "rater_id", "created_at"
        )
    )
    missing = []
    for spec in specs:
        query, document = queries[spec["query"]], documents[spec["external_id"]]
        rater = raters[spec["rater"]]
        if (query.pk, document.pk, rater.pk, spec["created_at"]) in existing:
            continue
        kind = Judgement.Kind.GRADE if spec["grade"] is not None else Judgement.Kind.CANT_TELL
        missing.append(
            Judgement(
                query=query,
                document=document,
                rater=rater,
                kind=kind,
                grade=spec["grade"],
                note=spec["note"],
                created_at=spec["created_at"],
                source=Judgement.Source.DEMO,
            )
        )
    # One statement per query: the pool trigger recounts the pairs each statement
    # touches, and on a test database whose statistics were taken while it held only
    # rolled-back rows the planner thinks the judgement table is empty, so a statement
    # touching every demo pair at once costs (pairs x events x pairs) and took minutes.
    # Per query it stays below a second even then (and costs ~0.1 s when statistics
    # are sound).
    missing.sort(key=lambda judgement: judgement.query_id)
    for _, batch in itertools.groupby(missing, key=lambda judgement: judgement.query_id):
        Judgement.objects.bulk_create(list(batch))
    return len(missing)


# A second copy of the same answer this soon is a double click or a resubmitted form.
DUPLICATE_WINDOW = dt.timedelta(seconds=1)


@transaction.atomic
def judgement_submit(
    *,
    rater,
    project: Project,
    query: Query,
    document: Document,
    kind: str,
    grade: int | None,
    note: str = "",
    source: str = Judgement.Source.WEB,
    deduplicate: bool = True,
) -> tuple[Judgement, bool]:
    """Record a rater's answer (rating pages or API); return it and whether it is new.

    Refuses (``ValidationError``, nothing written) a rater who may not rate the project
    and a pair that is not one of the project's hits. With ``deduplicate`` (the rating
    pages), the same answer to the same pair again within ``DUPLICATE_WINDOW`` returns
    the first event instead of a second one; API clients get an event per post and
    read the log to avoid repeats. The rater's lease on the pair is released.
    """
    _check_rating_allowed(rater, project, query, document)
    if deduplicate:
        # Serialise this rater's submissions, so that two copies of one post cannot
        # both pass the duplicate check below.
        User.objects.select_for_update(no_key=True).filter(pk=rater.pk).first()
        newest = _newest_event(rater, query, document)
        if (
            newest is not None
            and (newest.kind, newest.grade) == (kind, grade)
            and timezone.now() - newest.created_at < DUPLICATE_WINDOW
        ):
            return newest, False
    judgement = judgement_record(
        rater=rater,
        query=query,
        document=document,
        kind=kind,
        grade=grade,
        note=note,
        source=source,
    )
    queue.lease_release(rater=rater, query_id=query.pk, document_id=document.pk)
    return judgement, True


@transaction.atomic
def judgement_undo(*, rater, judgement: Judgement) -> Judgement:
    """Take ``judgement`` back with a new event; nothing is deleted.

    The new event repeats the rater's answer before it, or retracts the answer when
    ``judgement`` was their first. Refuses an event of another rater, and one that is
    no longer the rater's current answer (it was changed since).
    """
    if judgement.rater_id != rater.pk:
        raise ValidationError("Only your own answers can be undone.")
    User.objects.select_for_update(no_key=True).filter(pk=rater.pk).first()
    if _newest_event(rater, judgement.query, judgement.document) != judgement:
        raise ValidationError("That answer has changed since; revise it in My judgements.")
    earlier = (
        Judgement.objects.filter(rater=rater, query=judgement.query, document=judgement.document)
        .filter(
            Q(created_at__lt=judgement.created_at)
            | Q(created_at=judgement.created_at, id__lt=judgement.pk)
        )
        .order_by("-created_at", "-id")
        .first()
    )
    if earlier is None or earlier.kind == Judgement.Kind.RETRACT:
        kind, grade, note = Judgement.Kind.RETRACT, None, ""
    else:
        kind, grade, note = earlier.kind, earlier.grade, earlier.note
    return judgement_record(
        rater=rater,
        query=judgement.query,
        document=judgement.document,
        kind=kind,
        grade=grade,
        note=note,
    )


def _check_rating_allowed(rater, project: Project, query: Query, document: Document) -> None:
    if not queue.may_rate(rater, project):
        raise ValidationError(f"{rater.get_username()} may not rate {project.name}.")
    in_project = query.project_id == project.pk and document.project_id == project.pk
    if not in_project or not Hit.objects.filter(query=query, document=document).exists():
        raise ValidationError(f"That query and document are not a pair of {project.name}.")


def _newest_event(rater, query: Query, document: Document) -> Judgement | None:
    events = Judgement.objects.filter(rater=rater, query=query, document=document)
    return events.order_by("-created_at", "-id").first()


@transaction.atomic
def judgement_bulk_submit(
    *, rater, project: Project, query: Query, answers: dict[int, tuple[str, int | None]]
) -> int:
    """Record the bulk page's answers, keyed by document id, all or nothing.

    An answer equal to the rater's current one is not repeated. Returns how many
    events were written; raises ``ValidationError`` (nothing written) when any pair is
    not part of the project.
    """
    documents = Document.objects.filter(project=project).in_bulk(list(answers))
    written = 0
    for document_id, (kind, grade) in sorted(answers.items()):
        document = documents.get(document_id)
        if document is None:
            raise ValidationError(f"Document {document_id} is not part of {project.name}.")
        _check_rating_allowed(rater, project, query, document)
        newest = _newest_event(rater, query, document)
        if newest is not None and (newest.kind, newest.grade) == (kind, grade):
            continue
        judgement_record(rater=rater, query=query, document=document, kind=kind, grade=grade)
        written += 1
    return written


# Imports. A parser (judgements.importers) turns an upload into rows and
# line-numbered errors. Rows are written in batches as they come; the first error
# stops the writing while parsing goes on, to report every error at once; raising
# ImportRejected at the end rolls back what was written. So an import is all or
# nothing, and memory stays flat for a file of any length.

IMPORT_BATCH = 20_000
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


@dataclass(frozen=True)
class ImportResult:
    rows: int
    created: int
    updated: int = 0
    import_id: uuid.UUID | None = None
    rater: str = ""
    result_list: ResultList | None = None


@transaction.atomic
def query_import(*, project: Project, upload: Iterable[bytes], file_format: str) -> ImportResult:
    """Add the queries of a CSV or JSON upload; queries the project has are left as they are.

    Raises ``ImportRejected`` listing every error by line, and writes nothing, if any
    row is bad.
    """
    known = set(project.queries.values_list("text", flat=True))
    created = 0

    def write(rows) -> None:
        nonlocal created
        new = [Query(project=project, text=row.text, description=row.description) for row in rows]
        created += len(Query.objects.bulk_create([q for q in new if q.text not in known]))

    rows = _import_rows(importers.QUERY_FORMATS[file_format](upload), write)
    return ImportResult(rows=rows, created=created)


@transaction.atomic
def document_import(*, project: Project, upload: Iterable[bytes]) -> ImportResult:
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

    rows = _import_rows(importers.documents_jsonl(upload), write)
    return ImportResult(rows=rows, created=created, updated=rows - created)


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
    upload: Iterable[bytes],
    file_format: str,
    uploaded_by=None,
    name: str = "",
    engine: str = "",
    captured_at: datetime | None = None,
    query_map: Iterable[bytes] | None = None,
) -> ImportResult:
    """Create a result list from a TREC run or JSON upload; all or nothing.

    Name, engine and capture time come from the arguments, else from the file (the
    TREC tag; the JSON's fields), else the time is now. Documents the project lacks
    are created from the hit (TREC: the id alone). ``query_map`` is a queries CSV
    with ``id,text`` that says which query each TREC qid is.
    """
    vocabulary = _vocabulary(project, query_map=query_map, documents=True)
    writer = _HitWriter(project, vocabulary, RunInfo(name, engine, captured_at), uploaded_by)
    parsed = importers.RESULT_LIST_FORMATS[file_format](upload, vocabulary)
    rows = _import_rows(writer.take_info(parsed), writer.write)
    if writer.result_list is None:
        raise ImportRejected([LineError(None, None, "The file has no hits.")], 1)
    writer.staging.insert()
    metrics_schedule_refresh(project_id=project.pk, query_ids=sorted(writer.query_ids))
    return ImportResult(rows=rows, created=rows, result_list=writer.result_list)


class _HitWriter:
    def __init__(self, project, vocabulary, given: RunInfo, uploaded_by):
        self.project, self.vocabulary, self.uploaded_by = project, vocabulary, uploaded_by
        self.given, self.found, self.result_list, self.query_ids = given, RunInfo(), None, set()
        self.staging = _Staging(Hit, HIT_COLUMNS, order="query_id, rank")

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
        documents = self.vocabulary.documents
        self.query_ids.update(row.query_id for row in rows)
        run = self.result_list.pk
        self.staging.copy(
            f"{run}\t{row.query_id}\t{documents[row.external_id]}\t{row.rank}\t"
            f"{_copy_value(row.score)}\n"
            for row in rows
        )

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
                details = row.document or DocumentRow(row.line, row.external_id)
                missing.setdefault(row.external_id, _document(self.project, details))
        for document in Document.objects.bulk_create(list(missing.values())):
            self.vocabulary.documents[document.external_id] = document.pk


@transaction.atomic
def judgement_import(
    *,
    project: Project,
    upload: Iterable[bytes],
    file_format: str,
    uploaded_by,
    query_map: Iterable[bytes] | None = None,
) -> ImportResult:
    """Append the judgements of an upload as events with ``source=import``; all or nothing.

    All rows share one new ``import_id``. Quepid, qrels, RRE and LTR files carry one
    grade per pair and no rater: their events go to the project's import rater (see
    ``import_rater``), with a note naming the format and ``uploaded_by``. Event files
    (``jsonl``, ``csv``) name their raters and times and keep them.
    """
    pairs = file_format in importers.PAIR_FORMATS
    vocabulary = _vocabulary(project, query_map=query_map, documents=True, raters=not pairs)
    rater = import_rater(project) if pairs else None
    uploader = uploaded_by.get_username() if uploaded_by else "a management command"
    note = f"Imported from {file_format} by {uploader}" if pairs else ""
    writer = _JudgementWriter(rater.pk if rater else None, note)
    rows = _import_rows(importers.JUDGEMENT_FORMATS[file_format](upload, vocabulary), writer.write)
    writer.staging.insert()
    metrics_schedule_refresh(project_id=project.pk, query_ids=sorted(writer.query_ids))
    rater_name = rater.get_username() if rater else ""
    return ImportResult(rows=rows, created=rows, import_id=writer.import_id, rater=rater_name)


class _JudgementWriter:
    def __init__(self, rater_id: int | None, note: str):
        self.rater_id, self.note, self.query_ids = rater_id, note, set()
        self.import_id, self.now = uuid.uuid4(), timezone.now()
        self.staging = _Staging(Judgement, JUDGEMENT_COLUMNS, order="query_id, document_id")

    def write(self, rows) -> None:
        self.query_ids.update(row.query_id for row in rows)
        # Formatting in Python is the slow part of an import: what every row shares
        # is formatted once per batch.
        fixed = f"{Judgement.Source.IMPORT.value}\t{self.import_id}\n"
        note, now = _copy_value(self.note), _copy_value(self.now)
        self.staging.copy(
            f"{row.query_id}\t{row.document_id}\t{row.rater_id or self.rater_id}\t{row.kind}\t"
            f"{_copy_value(row.grade)}\t{_copy_value(row.note) if row.note else note}\t"
            f"{_copy_value(row.created_at) if row.created_at else now}\t{fixed}"
            for row in rows
        )


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
    queries = dict(project.queries.values_list("text", "id"))
    qids = {str(pk): pk for pk in queries.values()}
    if query_map is not None:
        qids = {key: queries[text] for key, text in _query_keys(query_map) if text in queries}
    return Vocabulary(
        grades=frozenset(project.grade_values),
        queries=queries,
        qids=qids,
        documents=dict(project.documents.values_list("external_id", "id")) if documents else {},
        raters=dict(User.objects.values_list("username", "id")) if raters else {},
    )


def _query_keys(upload: Iterable[bytes]) -> list[tuple[str, str]]:
    """(id, text) pairs of a queries CSV that maps a TREC file's qids to queries."""
    errors, keys = ErrorLog(), []
    for item in importers.queries_csv(upload):
        if isinstance(item, LineError):
            errors.add(item._replace(message=f"In the queries file: {item.message}"))
        elif item.key:
            keys.append((item.key, item.text))
    errors.raise_if_any()
    return keys


def _import_rows(items, write, *, batch: int = IMPORT_BATCH) -> int:
    """Hand rows to ``write`` in batches until an error shows; return how many rows came."""
    errors, rows, count, refused = ErrorLog(), [], 0, None
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
}
HIT_COLUMNS = {
    "result_list_id": "bigint",
    "query_id": "bigint",
    "document_id": "bigint",
    "rank": "integer",
    "score": "double precision",
}


class _Staging:
    """Rows COPY'd batch by batch into a temporary table, then written in one INSERT.

    The rating queue's triggers (migration 0004) lock the pool rows that a statement
    touches, in a fixed order. One INSERT for the whole import keeps to that order,
    where many batches, each locking its own rows, could deadlock against raters
    grading at the same time. The table is dropped when the transaction ends.
    """

    def __init__(self, model, columns: dict[str, str], *, order: str):
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

    def insert(self) -> None:
        if self.empty:
            return
        names = ", ".join(self.columns)
        with connection.cursor() as cursor:
            # Checking each row's foreign keys at commit costs more than the rest of the
            # import; every id was resolved in this transaction, and locking the rows
            # they point to (below) keeps them from being deleted until it commits.
            skipped = bulk.skip_foreign_key_checks()
            cursor.execute(
                f"INSERT INTO {self.model._meta.db_table} ({names}) "
                f"SELECT {names} FROM {self.table} ORDER BY {self.order}"
            )
            if skipped:
                cursor.execute("SET LOCAL session_replication_role = origin")
                self._lock_referenced_rows(cursor)

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
