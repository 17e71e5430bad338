import threading

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from judgements.models import Judgement
from judgements.services import judgement_record
from tests.factories import DocumentFactory, ProjectFactory, UserFactory


@pytest.fixture
def pair(query_with_hits):
    return query_with_hits, query_with_hits.hits.get(rank=1).document


def test_it_records_a_grade_with_rater_and_time(rater, pair):
    query, document = pair
    judgement = judgement_record(rater=rater, query=query, document=document, grade=3)
    stored = Judgement.objects.get()
    assert stored == judgement
    assert (stored.rater, stored.grade, stored.kind, stored.source) == (rater, 3, "grade", "web")
    assert stored.created_at is not None


def test_it_records_cant_tell_without_a_grade(rater, pair):
    query, document = pair
    judgement_record(rater=rater, query=query, document=document, grade=None, kind="cant_tell")
    assert Judgement.objects.get().grade is None


def test_a_changed_mind_adds_an_event_and_keeps_the_first(rater, pair):
    query, document = pair
    judgement_record(rater=rater, query=query, document=document, grade=1)
    judgement_record(rater=rater, query=query, document=document, grade=3)
    assert sorted(Judgement.objects.values_list("grade", flat=True)) == [1, 3]


def test_a_grade_outside_the_scale_is_refused_and_nothing_is_written(rater, pair):
    query, document = pair
    with pytest.raises(ValidationError) as error:
        judgement_record(rater=rater, query=query, document=document, grade=4)
    assert error.value.message_dict == {"grade": ["Grade 4 is outside the scale 0-3."]}
    assert Judgement.objects.count() == 0


def test_a_document_of_another_project_is_refused_and_nothing_is_written(rater, pair):
    query, _ = pair
    stranger = DocumentFactory(project=ProjectFactory())
    with pytest.raises(ValidationError) as error:
        judgement_record(rater=rater, query=query, document=stranger, grade=2)
    assert "another project" in error.value.message_dict["document"][0]
    assert Judgement.objects.count() == 0


def test_a_user_without_the_rater_role_is_refused_and_nothing_is_written(outsider, pair):
    query, document = pair
    with pytest.raises(ValidationError) as error:
        judgement_record(rater=outsider, query=query, document=document, grade=2)
    assert error.value.message_dict == {"rater": ["dave does not have the rater role."]}
    assert Judgement.objects.count() == 0


def test_an_analyst_may_grade_too(analyst, pair):
    query, document = pair
    judgement_record(rater=analyst, query=query, document=document, grade=0)
    assert Judgement.objects.filter(rater=analyst).count() == 1


def test_a_grade_event_needs_a_grade(rater, pair):
    query, document = pair
    with pytest.raises(ValidationError, match="A grade is required"):
        judgement_record(rater=rater, query=query, document=document, grade=None)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_raters_grading_one_pair_at_the_same_moment_are_both_stored(query_with_hits):
    query, document = query_with_hits, query_with_hits.hits.get(rank=1).document
    raters = [UserFactory(username=name, roles=["rater"]) for name in ("alice", "bob")]
    barrier = threading.Barrier(len(raters))
    errors = []

    def grade(rater, value):
        try:
            barrier.wait(timeout=10)
            judgement_record(rater=rater, query=query, document=document, grade=value)
        except Exception as error:  # Collected so the main thread can report it.
            errors.append(error)
        finally:
            connection.close()

    grades = zip(raters, (1, 3), strict=True)
    threads = [threading.Thread(target=grade, args=pair) for pair in grades]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == []
    stored = Judgement.objects.values_list("rater__username", "grade")
    assert sorted(stored) == [("alice", 1), ("bob", 3)]
