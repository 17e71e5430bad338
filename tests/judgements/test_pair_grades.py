import datetime as dt
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.utils import timezone

from judgements.bulk import project_delete_fast
from judgements.derived import oracles
from judgements.models import Judgement, PairGrade, Project
from tests.factories import DocumentFactory, JudgementFactory, QueryFactory, UserFactory
from tests.judgements.test_queue import run_at_once

# The trigger-kept table of current grades (judgements/sql/pair_grades.sql) against the
# log it summarises: each pair's current grades, sorted, with their raters aligned.


def assert_pair_grades_match_the_log(project):
    assert oracles.stored_pair_grades(project) == oracles.expected_pair_grades(project)


def random_events(project, *, seed: int, events: int = 300, raters: int = 5, pairs: int = 12):
    """Revisions, can't-tell and retractions by several raters over a few pairs, at
    random times (ties included), created one by one and in bulk."""
    rng = np.random.default_rng(seed)
    queries = [QueryFactory(project=project, text=f"q{seed}-{n}") for n in range(3)]
    documents = [DocumentFactory(project=project, external_id=f"d{seed}-{n}") for n in range(4)]
    people = [UserFactory(username=f"r{seed}-{n}", roles=["rater"]) for n in range(raters)]
    start = timezone.now() - dt.timedelta(days=10)
    batch = []
    for _ in range(events):
        pair = int(rng.integers(pairs))
        kind = rng.choice(["grade"] * 6 + ["cant_tell", "retract"])
        batch.append(
            Judgement(
                query=queries[pair % 3],
                document=documents[pair // 3],
                rater=people[int(rng.integers(raters))],
                kind=kind,
                grade=int(rng.integers(4)) if kind == "grade" else None,
                created_at=start + dt.timedelta(minutes=int(rng.integers(2000))),
            )
        )
    Judgement.objects.bulk_create(batch[: events // 2])
    for event in batch[events // 2 :]:
        event.save()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_table_matches_the_log_after_random_events(project, seed):
    random_events(project, seed=seed)
    assert PairGrade.objects.filter(project=project).count() > 0
    assert_pair_grades_match_the_log(project)


def test_a_revision_replaces_the_raters_grade(project, query_with_hits, rater, other_rater):
    document = query_with_hits.hits.get(rank=1).document
    JudgementFactory(rater=rater, query=query_with_hits, document=document, grade=0)
    JudgementFactory(rater=other_rater, query=query_with_hits, document=document, grade=3)
    row = PairGrade.objects.get(query=query_with_hits, document=document)
    assert (row.graded, row.lowest, row.highest, row.grades) == (2, 0, 3, [0, 3])
    assert row.raters == [rater.pk, other_rater.pk]
    JudgementFactory(rater=rater, query=query_with_hits, document=document, grade=3)
    row.refresh_from_db()
    assert (row.graded, row.lowest, row.grades) == (2, 3, [3, 3])
    assert row.raters == sorted([rater.pk, other_rater.pk])


def test_a_retraction_leaves_the_pair_with_no_grade(project, query_with_hits, rater):
    document = query_with_hits.hits.get(rank=1).document
    JudgementFactory(rater=rater, query=query_with_hits, document=document, grade=2)
    JudgementFactory(
        rater=rater, query=query_with_hits, document=document, kind="retract", grade=None
    )
    row = PairGrade.objects.get(query=query_with_hits, document=document)
    assert (row.graded, row.lowest, row.highest, row.grades, row.raters) == (0, None, None, [], [])


def test_deleting_a_query_deletes_its_pairs(project, query_with_hits, rater):
    document = query_with_hits.hits.get(rank=1).document
    JudgementFactory(rater=rater, query=query_with_hits, document=document, grade=2)
    query_with_hits.delete()
    assert not PairGrade.objects.exists()


def test_deleting_events_directly_recounts_their_pairs(project, query_with_hits, rater):
    document = query_with_hits.hits.get(rank=1).document
    JudgementFactory(rater=rater, query=query_with_hits, document=document, grade=1)
    newest = JudgementFactory(rater=rater, query=query_with_hits, document=document, grade=3)
    Judgement.objects.filter(pk=newest.pk).delete()
    assert PairGrade.objects.get().grades == [1]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_grades_stay_exact_when_raters_grade_one_new_pair_at_once():
    query = QueryFactory()
    document = DocumentFactory(project=query.project)
    raters = [UserFactory(username=f"rater{n}", roles=["rater"]) for n in range(8)]

    def grade(rater):
        grade = int(rater.username[-1]) % 4
        JudgementFactory(rater=rater, query=query, document=document, grade=grade)

    run_at_once(raters, grade)
    row = PairGrade.objects.get()
    assert (row.graded, row.lowest, row.highest) == (8, 0, 3)
    assert_pair_grades_match_the_log(query.project)


def test_generate_load_fills_the_table_and_replacing_it_leaves_nothing_behind(db):
    options = {"queries": 10, "hits_per_query": 10, "judgements": 400, "raters": 4}
    call_command("generate_load", stdout=StringIO(), **options)
    first = Project.objects.get(slug="generated-load")
    assert_pair_grades_match_the_log(first)
    call_command("generate_load", stdout=StringIO(), seed=1, **options)
    project = Project.objects.get(slug="generated-load")
    assert set(PairGrade.objects.values_list("project", flat=True)) == {project.pk}
    assert_pair_grades_match_the_log(project)
    project_delete_fast("generated-load")
    assert not PairGrade.objects.exists()
