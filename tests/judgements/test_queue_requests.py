import pytest

from judgements.models import Hit, QueuePair, QueueRequest
from judgements.queue import queue_next_pair, queue_request_grades, rater_progress
from tests.factories import (
    DocumentFactory,
    JudgementFactory,
    ProjectFactory,
    QueryFactory,
    ResultListFactory,
    UserFactory,
)
from tests.judgements.test_queue import assert_pool_matches_the_log, ranked

# charlie (analyst) sends pairs alice (rater) and bob (rater) disagree on back to the
# queue; carol (rater) has not seen them and is the one who gets them next.


@pytest.fixture
def carol(db):
    return UserFactory(username="carol", roles=["rater"])


@pytest.fixture
def docs(project):
    return [DocumentFactory(project=project, external_id=f"D{n}") for n in range(1, 5)]


@pytest.fixture
def tent(project, docs):
    query = QueryFactory(project=project, text="tent")
    ranked(ResultListFactory(project=project, name="bm25"), query, docs)
    return query


@pytest.fixture
def disputed(tent, docs, rater, other_rater):
    """D1 graded 0 by alice and 3 by bob: complete for judges_per_pair = 1."""
    JudgementFactory(rater=rater, query=tent, document=docs[0], grade=0)
    JudgementFactory(rater=other_rater, query=tent, document=docs[0], grade=3)
    return (tent.pk, docs[0].pk)


def pair_state(pair):
    row = QueuePair.objects.get(query_id=pair[0], document_id=pair[1])
    return row.grades, row.wanted, row.needed


def test_a_sent_back_pair_needs_one_more_grade(project, disputed, analyst):
    assert pair_state(disputed) == (2, 0, -1)

    result = queue_request_grades(project=project, pairs=[disputed], requested_by=analyst)

    assert (result.sent, result.waiting) == (1, 0)
    assert pair_state(disputed) == (2, 3, 1)
    request = QueueRequest.objects.get()
    assert (request.requested_by, request.wanted) == (analyst, 3)
    assert_pool_matches_the_log(project)


def test_a_rater_who_has_not_answered_it_gets_it_and_closes_it(
    project, disputed, analyst, rater, carol, tent, docs
):
    for document in docs[1:]:
        JudgementFactory(rater=carol, query=tent, document=document, grade=1)
    queue_request_grades(project=project, pairs=[disputed], requested_by=analyst)

    # alice answered it already, and every other pair is complete.
    assert queue_next_pair(rater=rater, project=project) is None
    assert queue_next_pair(rater=carol, project=project).document_id == disputed[1]
    JudgementFactory(rater=carol, query=tent, document=docs[0], grade=2)

    assert pair_state(disputed) == (3, 3, 0)
    assert rater_progress(rater=carol, project=project).left == 0
    assert_pool_matches_the_log(project)


def test_asking_twice_is_asking_once(project, disputed, analyst):
    queue_request_grades(project=project, pairs=[disputed], requested_by=analyst)
    again = queue_request_grades(project=project, pairs=[disputed, disputed], requested_by=analyst)

    assert (again.sent, again.waiting) == (0, 1)
    assert QueueRequest.objects.count() == 1
    assert pair_state(disputed) == (2, 3, 1)
    assert "already waiting" in again.message


def test_once_the_grade_came_the_pair_can_be_sent_back_again(
    project, disputed, analyst, carol, tent, docs
):
    queue_request_grades(project=project, pairs=[disputed], requested_by=analyst)
    JudgementFactory(rater=carol, query=tent, document=docs[0], grade=3)
    result = queue_request_grades(project=project, pairs=[disputed], requested_by=analyst)
    assert result.sent == 1
    assert pair_state(disputed) == (3, 4, 1)


def test_a_pair_deeper_than_the_pool_joins_it_and_stays_when_the_depth_changes(
    project, tent, docs, rater, other_rater, analyst
):
    project.pool_depth = 2
    project.save()
    deep = docs[3]
    JudgementFactory(rater=rater, query=tent, document=deep, grade=0)
    JudgementFactory(rater=other_rater, query=tent, document=deep, grade=2)
    assert not QueuePair.objects.filter(document=deep).exists()

    queue_request_grades(project=project, pairs=[(tent.pk, deep.pk)], requested_by=analyst)

    assert QueuePair.objects.get(document=deep).best_rank == 4
    project.pool_depth = 1
    project.save()
    assert pair_state((tent.pk, deep.pk)) == (2, 3, 1)
    assert_pool_matches_the_log(project)


def test_the_project_judges_per_pair_counts_when_it_asks_for_more(project, disputed, analyst):
    queue_request_grades(project=project, pairs=[disputed], requested_by=analyst)
    project.judges_per_pair = 5
    project.save()
    assert pair_state(disputed) == (2, 3, 3)
    project.judges_per_pair = 1
    project.save()
    assert pair_state(disputed) == (2, 3, 1)
    assert_pool_matches_the_log(project)


def test_pairs_no_result_list_returns_or_of_another_project_are_not_queued(
    project, rater, analyst
):
    query = QueryFactory(project=project)
    unranked = DocumentFactory(project=project)
    JudgementFactory(rater=rater, query=query, document=unranked, grade=1)
    elsewhere = JudgementFactory(rater=rater, query__project=ProjectFactory(), grade=1)

    result = queue_request_grades(
        project=project,
        pairs=[(query.pk, unranked.pk), (elsewhere.query_id, elsewhere.document_id)],
        requested_by=analyst,
    )

    assert (result.sent, result.unreturned, result.unknown) == (0, 1, 1)
    assert not QueueRequest.objects.exists()
    assert "not returned by any result list" in result.message


def test_new_lists_keep_the_pool_as_the_log_says(project, rater, other_rater, analyst):
    """Lists inserted one statement each (as an import or a capture writes them), seeded:
    pairs that join the pool (some judged before), pairs a list ranks better or worse
    than the pool knows, a pair asked for below the pool depth, against the pool the log
    gives (the oracle) after each list."""
    random = __import__("random").Random(7)
    project.pool_depth = 3
    project.save()
    queries = [QueryFactory(project=project, text=f"q{n}") for n in range(6)]
    documents = [DocumentFactory(project=project, external_id=f"D{n}") for n in range(12)]
    for query in queries[:3]:
        for document in random.sample(documents, 4):
            JudgementFactory(rater=random.choice([rater, other_rater]), query=query,
                             document=document, grade=random.randint(0, 3))  # fmt: skip
    ranked(ResultListFactory(project=project, name="first"), queries[0], documents[:3])
    asked = (queries[0], documents[3])
    Hit.objects.create(result_list=project.result_lists.get(), query=asked[0],
                       document=asked[1], rank=10)  # fmt: skip
    # Sent back after one grade (only judged pairs are), for a second one.
    JudgementFactory(rater=rater, query=asked[0], document=asked[1], grade=1)
    queue_request_grades(project=project, pairs=[(asked[0].pk, asked[1].pk)],
                         requested_by=analyst)  # fmt: skip
    # Below the pool depth, in the pool because it was asked for, at its rank there.
    deep_ranks = {0: 20, 1: 8}
    best = [10, 10, 8]
    for number in range(6):
        result_list = ResultListFactory(project=project, name=f"list {number}")
        hits = []
        for query in queries:
            # In the first two lists the asked-for pair comes only at its deep rank.
            candidates = [
                document for document in documents
                if not (number in deep_ranks and (query, document) == asked)
            ]  # fmt: skip
            for rank, document in enumerate(random.sample(candidates, 6), start=1):
                hits.append(Hit(result_list=result_list, query=query, document=document,
                                rank=rank))  # fmt: skip
        if number in deep_ranks:
            hits.append(Hit(result_list=result_list, query=asked[0], document=asked[1],
                            rank=deep_ranks[number]))  # fmt: skip
        Hit.objects.bulk_create(hits)
        assert_pool_matches_the_log(project)
        pair = QueuePair.objects.get(query=asked[0], document=asked[1])
        assert pair.wanted > 0
        if number < 2:
            assert pair.best_rank == best[number + 1]
