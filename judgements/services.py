"""Writes that span more than one check or row: recording grades, loading data."""

import datetime as dt
import itertools
from contextlib import nullcontext
from datetime import datetime

import numpy as np
from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from judgements import bulk, loadgen, queue

# The import services live in judgements.imports; these names stay importable here.
from judgements.imports import (  # noqa: F401
    ImportResult,
    _copy_value,
    _Staging,
    document_import,
    import_rater,
    judgement_import,
    query_import,
    result_list_import,
)
from judgements.loadgen import LoadPlan
from judgements.models import (
    Document,
    Hit,
    Judgement,
    PairGrade,
    Project,
    Query,
    QueuePair,
    RankedHits,
    ResultList,
)
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
    with bulk.indexes_deferred(Query, Document, Hit) if large else nullcontext():
        query_ids = _generated_queries(project, plan)
        document_ids = _generated_documents(project, plan)
        say(f"{plan.queries} queries and {plan.documents} documents")
        _generated_hits(project, plan, ranked, query_ids, document_ids)
        say(f"{ranked.size} hits in {plan.result_lists} result lists; indexing")
    # The triggers on judgements join the new pairs with the pool and the earlier
    # grades: judgements go in with every index in place, and with statistics that
    # know the rows just written (planned as empty tables, 50k judgements took hours).
    bulk.analyze(Query, Document, Hit, Judgement, QueuePair, PairGrade, RankedHits)
    events = loadgen.judgement_events(rng, plan, grades, ranked)
    _generated_judgements(plan, events, query_ids, document_ids, rater_ids)
    say(f"{plan.judgements} judgement events from {plan.raters} raters")
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
            "external_id": np.full(plan.queries, ""),
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


class PairComplete(ValidationError):
    """The pair already has the grades it needs from other raters (see queue.pair_has_room)."""


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

    A new answer to a pair that already has its ``judges_per_pair`` grades from other
    raters (the queue's rule, leases included) is refused with ``PairComplete``; a
    rater may always change their own answer, and retract it.
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
    if kind != Judgement.Kind.RETRACT and not queue.pair_has_room(
        rater=rater, project=project, query_id=query.pk, document_id=document.pk
    ):
        raise PairComplete(
            f"This pair already has the {project.judges_per_pair} grade(s) it needs from "
            "other raters; ask for the next pair."
        )
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
