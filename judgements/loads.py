"""Whole projects written at once: the demo (``load_demo``) and generated load
(``generate_load``).

Both write inside ``judgements.derived.rebuild.deferred()``: the triggers that keep
the derived tables skip every statement of the load, and one ``rebuild`` of the
project follows, set-based, with every index in place.
"""

import datetime as dt

import numpy as np
from django.contrib.auth.models import Group, User
from django.db import transaction

from judgements import bulk, loadgen
from judgements.derived import rebuild
from judgements.loadgen import LoadPlan
from judgements.models import (
    Document,
    Hit,
    Judgement,
    PairGrade,
    Project,
    Query,
    QueryGrades,
    QueuePair,
    RankedGrades,
    RankedHits,
    ResultList,
)
from judgements.roles import Role
from metrics.revisions import revisions_recount


@transaction.atomic
def generated_project_create(
    *, plan: LoadPlan, slug: str, progress=None, keep_indexes: bool = False
) -> Project:
    """Build a synthetic project of ``plan``'s size in one transaction, with COPY.

    An existing project with the same slug is replaced. ``progress`` is called with
    a short message after each stage. The tables' secondary indexes are dropped and
    built again after the rows are in when that costs less (``bulk.rebuild_pays``);
    dropping them locks the tables against every other session until the load
    commits, which ``keep_indexes`` avoids (rows are then added to them as they come).
    """
    say = progress or (lambda message: None)
    bulk.skip_foreign_key_checks()
    if Project.objects.filter(slug=slug).exists():
        bulk.project_delete_fast(slug)
        # So that estimated_rows below counts what is left, not what was deleted.
        bulk.analyze(Query, Document, Hit, Judgement)
    project = Project.objects.create(
        name=f"Generated load ({plan.queries} queries, seed {plan.seed})",
        slug=slug,
        judges_per_pair=1,
    )
    rng = np.random.default_rng(plan.seed)
    grades = loadgen.true_grades(rng, plan)
    ranked = loadgen.rankings(rng, plan, grades)
    events = loadgen.judgement_events(rng, plan, grades, ranked)
    rater_ids = _generated_raters(plan)
    hit_count = plan.queries * plan.hits_per_query * plan.result_lists
    deferred_indexes = [Query, Document, Hit] if bulk.rebuild_pays(hit_count, Hit) else []
    if bulk.rebuild_pays(plan.judgements, Judgement):
        deferred_indexes.append(Judgement)
    if keep_indexes:
        deferred_indexes = []
    tables = ", ".join(model._meta.db_table for model in deferred_indexes)
    say(f"indexes of {tables} dropped, built again at the end" if tables else "indexes kept")
    # No trigger recounts the derived tables per statement: one rebuild follows, with
    # every index back and statistics that know the new rows.
    with rebuild.deferred(), bulk.indexes_deferred(*deferred_indexes):
        query_ids = _generated_queries(project, plan)
        document_ids = _generated_documents(project, plan)
        say(f"{plan.queries} queries and {plan.documents} documents")
        _generated_hits(project, plan, ranked, query_ids, document_ids)
        say(f"{ranked.size} hits in {plan.result_lists} result lists")
        _generated_judgements(plan, events, query_ids, document_ids, rater_ids)
        say(f"{plan.judgements} judgement events from {plan.raters} raters; indexing")
    bulk.analyze(Query, Document, Hit, Judgement)
    say("indexed")
    seconds = rebuild.rebuild(project.pk)
    bulk.analyze(PairGrade, QueuePair, RankedHits, RankedGrades, QueryGrades)
    parts = ", ".join(f"{part} {spent:.1f} s" for part, spent in seconds.items())
    say(f"derived tables rebuilt ({parts})")
    revisions_recount(query_ids=query_ids.tolist())
    say("revisions counted")
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
            "created_at": np.full(
                plan.queries,
                np.datetime64(project.created_at.astimezone(dt.UTC).replace(tzinfo=None)),
            ),
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

    Hits and judgements go in with the derived tables' triggers deferred, then one
    rebuild of the project counts pair grades, summaries and the pool.

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
    with rebuild.deferred():
        created["hits"] = _demo_result_lists(project, data.result_lists, queries, documents)
        created["judgements"] = _demo_judgements(data.judgements, queries, documents)
    rebuild.rebuild(project.pk)
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
    Judgement.objects.bulk_create(missing)
    return len(missing)
