import datetime as dt
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone

from judgements.bulk import project_delete_fast
from judgements.derived import oracles
from judgements.models import (
    Document,
    Hit,
    Judgement,
    Project,
    QueryGrades,
    RankedGrades,
    RankedHits,
    ResultList,
)
from judgements.packed import packed_fill
from metrics.core.consensus import POLICIES
from tests.factories import (
    DocumentFactory,
    JudgementFactory,
    ProjectFactory,
    QueryFactory,
    ResultListFactory,
    UserFactory,
)
from tests.judgements.test_pair_grades import assert_pair_grades_match_the_log, random_events
from tests.judgements.test_queue import run_at_once

# The packed summaries (the triggers' and judgements.packed's fill) against their
# recomputation from the log and the hits (judgements.derived.oracles), byte for byte.


def assert_summaries_match(project):
    packed_fill(project.pk)
    expected = oracles.expected_summaries(project)
    stored = oracles.stored_summaries(project)
    for name, want, have in zip(("queries", "hits", "grades"), expected, stored, strict=True):
        # Queries left with neither pairs nor hits may keep an emptied row.
        if name == "queries":
            have = {
                key: value for key, value in have.items() if key in want or value[:2] != (0, 0)
            }
        assert have == want, name


def random_hits(project, *, seed: int, lists: int = 2):
    """Result lists over the project's queries and documents, with gaps in the ranks."""
    rng = np.random.default_rng(seed)
    documents = list(Document.objects.filter(project=project))
    for number in range(lists):
        result_list = ResultListFactory(project=project, name=f"list {seed}-{number}")
        rows = []
        for query in project.queries.all():
            chosen = rng.choice(len(documents), size=int(rng.integers(1, 5)), replace=False)
            ranks = np.sort(rng.choice(np.arange(1, 12), size=len(chosen), replace=False))
            rows += [
                Hit(result_list=result_list, query=query, document=documents[d], rank=int(rank))
                for d, rank in zip(chosen, ranks, strict=True)
            ]
        Hit.objects.bulk_create(rows)


@pytest.mark.parametrize("seed", [1, 2])
def test_the_summaries_match_after_events_hits_moves_and_deletes(project, seed):
    random_events(project, seed=seed, events=150)
    random_hits(project, seed=seed)
    assert_summaries_match(project)
    assert RankedGrades.objects.filter(query__project=project).count() > 0

    random_events(project, seed=seed + 10, events=150)  # New queries and documents too.
    random_hits(project, seed=seed + 10, lists=1)
    assert_summaries_match(project)

    hit = Hit.objects.filter(result_list__project=project).order_by("pk").first()
    Hit.objects.filter(pk=hit.pk).update(rank=99)  # Moved to the end of its list.
    assert_summaries_match(project)

    Hit.objects.filter(pk__in=Hit.objects.order_by("-pk").values("pk")[:5]).delete()
    Judgement.objects.filter(pk__in=Judgement.objects.order_by("-pk").values("pk")[:20]).delete()
    assert_summaries_match(project)

    Document.objects.filter(project=project).order_by("pk").first().delete()
    ResultList.objects.filter(project=project).order_by("pk").first().delete()
    project.queries.order_by("pk").first().delete()
    assert_summaries_match(project)


def test_a_grade_updates_every_list_of_its_query(project, query_with_hits, rater, other_rater):
    other = ResultListFactory(project=project, name="other")
    documents = [hit.document for hit in query_with_hits.hits.order_by("rank")]
    Hit.objects.bulk_create(
        [
            Hit(result_list=other, query=query_with_hits, document=d, rank=9 - n)
            for n, d in enumerate(documents)
        ]
    )
    JudgementFactory(rater=rater, query=query_with_hits, document=documents[0], grade=3)
    JudgementFactory(rater=other_rater, query=query_with_hits, document=documents[0], grade=0)

    packed_fill()
    row = RankedGrades.objects.get(result_list=other, query=query_with_hits, policy="mean")
    ranked = np.frombuffer(bytes(row.ranked), dtype=">f8")
    assert ranked[-1] == 1.5 and np.isnan(ranked[:-1]).all()
    assert np.frombuffer(bytes(row.ideal), dtype=">f8").tolist() == [1.5]
    assert np.frombuffer(bytes(row.ideal_documents), dtype=">i4").tolist() == [1]
    assert row.graded == 2
    assert_summaries_match(project)


def test_deleting_a_query_or_a_project_leaves_nothing_behind(project, query_with_hits, rater):
    document = query_with_hits.hits.get(rank=1).document
    JudgementFactory(rater=rater, query=query_with_hits, document=document, grade=2)
    assert not RankedGrades.objects.exists() and QueryGrades.objects.get().stale
    assert packed_fill() == 1
    assert RankedGrades.objects.count() == len(POLICIES)
    assert not QueryGrades.objects.get().stale

    query_with_hits.delete()
    assert (QueryGrades.objects.count(), RankedHits.objects.count()) == (0, 0)
    assert RankedGrades.objects.count() == 0

    random_events(project, seed=3, events=60)
    random_hits(project, seed=3)
    packed_fill(project.pk)
    assert RankedGrades.objects.exists()
    project.delete()
    assert not (QueryGrades.objects.exists() or RankedGrades.objects.exists())


def test_a_fill_takes_its_own_projects_stale_queries_and_no_other(project, rater):
    other = ProjectFactory(name="Kitchen", slug="kitchen")
    for owner in (project, other):
        random_events(owner, seed=owner.pk, events=30)
        random_hits(owner, seed=owner.pk, lists=1)
    summaries = QueryGrades.objects.values_list("query__project", "project", "stale")
    assert {(owner, kept) for owner, kept, _ in summaries} == {
        (project.pk, project.pk),
        (other.pk, other.pk),
    }

    packed_fill(other.pk)

    stale = {owner for owner, _, is_stale in summaries.all() if is_stale}
    assert stale == {project.pk}
    assert_summaries_match(other)


def test_generate_load_fills_the_summaries_and_replacing_it_leaves_nothing(db):
    options = {"queries": 10, "hits_per_query": 10, "judgements": 400, "raters": 4}
    call_command("generate_load", stdout=StringIO(), **options)
    assert_summaries_match(Project.objects.get(slug="generated-load"))
    call_command("generate_load", stdout=StringIO(), seed=1, **options)
    project = Project.objects.get(slug="generated-load")
    assert_summaries_match(project)
    assert set(RankedHits.objects.values_list("result_list__project", flat=True)) == {project.pk}
    project_delete_fast("generated-load")
    assert not (QueryGrades.objects.exists() or RankedHits.objects.exists())
    assert not RankedGrades.objects.exists()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_summaries_stay_exact_when_raters_grade_one_query_and_a_list_arrives_at_once():
    query = QueryFactory()
    project = query.project
    documents = [DocumentFactory(project=project, external_id=f"d{n}") for n in range(6)]
    first = ResultListFactory(project=project, name="first")
    Hit.objects.bulk_create(
        [
            Hit(result_list=first, query=query, document=d, rank=n + 1)
            for n, d in enumerate(documents)
        ]
    )
    raters = [UserFactory(username=f"rater{n}", roles=["rater"]) for n in range(6)]
    importer = UserFactory(username="importer")

    def work(user):
        if user == importer:
            with transaction.atomic():
                second = ResultListFactory(project=project, name="second")
                Hit.objects.bulk_create(
                    [
                        Hit(result_list=second, query=query, document=d, rank=6 - n)
                        for n, d in enumerate(documents)
                    ]
                )
            return
        # Each rater grades another document, so no two writers share a pair row.
        number = int(user.username[-1])
        JudgementFactory(rater=user, query=query, document=documents[number], grade=number % 4)

    run_at_once([*raters, importer], work)
    assert_pair_grades_match_the_log(project)
    assert_summaries_match(project)
    assert RankedGrades.objects.filter(result_list__name="second").count() == len(POLICIES)


def test_the_triggers_fire_for_bulk_loads_that_skip_ordinary_triggers(project, rater):
    query = QueryFactory(project=project)
    document = DocumentFactory(project=project)
    result_list = ResultListFactory(project=project)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        Hit.objects.create(result_list=result_list, query=query, document=document, rank=1)
        Judgement.objects.create(
            rater=rater, query=query, document=document, grade=3, created_at=timezone.now()
        )
    assert_summaries_match(project)
    row = RankedGrades.objects.get(policy="median")
    assert np.frombuffer(bytes(row.ranked), dtype=">f8").tolist() == [3.0]


def test_an_event_dated_later_changes_the_summaries_at_once(project, query_with_hits, rater):
    # The summaries hold the state after every event; readers check the dates.
    document = query_with_hits.hits.get(rank=2).document
    later = timezone.now() + dt.timedelta(days=3)
    JudgementFactory(rater=rater, query=query_with_hits, document=document, grade=1)
    JudgementFactory(
        rater=rater, query=query_with_hits, document=document, grade=2, created_at=later
    )
    packed_fill()
    row = RankedGrades.objects.get(policy="mean")
    assert np.frombuffer(bytes(row.ranked), dtype=">f8")[1] == 2.0
