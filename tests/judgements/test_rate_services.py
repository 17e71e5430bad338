import threading

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from judgements.models import Judgement, QueueLease
from judgements.queue import queue_next_pair
from judgements.services import judgement_submit, judgement_undo
from tests.factories import (
    DocumentFactory,
    HitFactory,
    ProjectFactory,
    QueryFactory,
    ResultListFactory,
    UserFactory,
)


@pytest.fixture
def pair(query_with_hits):
    return {"query": query_with_hits, "document": query_with_hits.hits.get(rank=1).document}


def submit(rater, project, pair, grade=2, kind="grade"):
    return judgement_submit(rater=rater, project=project, kind=kind, grade=grade, **pair)


def test_an_answer_releases_the_raters_lease(rater, project, pair):
    queue_next_pair(rater=rater, project=project)
    submit(rater, project, pair)
    assert QueueLease.objects.count() == 0


def test_a_rater_not_named_by_the_project_is_refused(rater, other_rater, project, pair):
    project.raters.set([other_rater])
    with pytest.raises(ValidationError, match="alice may not rate Outdoor gear"):
        submit(rater, project, pair)
    assert Judgement.objects.count() == 0


def test_only_your_own_answer_can_be_undone(rater, other_rater, project, pair):
    judgement, _ = submit(other_rater, project, pair)
    with pytest.raises(ValidationError, match="Only your own"):
        judgement_undo(rater=rater, judgement=judgement)
    assert Judgement.objects.count() == 1


def test_an_answer_changed_since_cannot_be_undone(rater, project, pair):
    first, _ = submit(rater, project, pair, grade=1)
    submit(rater, project, pair, grade=3)
    with pytest.raises(ValidationError, match="has changed since"):
        judgement_undo(rater=rater, judgement=first)
    assert Judgement.objects.count() == 2


def test_undo_after_a_retraction_retracts_again(rater, project, pair):
    submit(rater, project, pair, grade=1)
    submit(rater, project, pair, grade=None, kind="retract")
    last, _ = submit(rater, project, pair, grade=2)
    judgement_undo(rater=rater, judgement=last)
    assert Judgement.objects.order_by("-id").first().kind == "retract"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_copies_of_one_post_at_once_are_written_once():
    project = ProjectFactory()
    query = QueryFactory(project=project)
    document = DocumentFactory(project=project)
    HitFactory(result_list=ResultListFactory(project=project), query=query, document=document)
    rater = UserFactory(username="alice", roles=["rater"])
    barrier = threading.Barrier(2)
    errors = []

    def post():
        try:
            barrier.wait(timeout=10)
            submit(rater, project, {"query": query, "document": document})
        except Exception as error:  # Collected so the main thread can report it.
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == []
    assert Judgement.objects.count() == 1
