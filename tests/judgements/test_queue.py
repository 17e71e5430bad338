import datetime as dt
import threading
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from judgements.models import (
    Hit,
    Judgement,
    Project,
    QueueLease,
    QueuePair,
    QueuePoolTally,
    QueueRaterTally,
    QueueRequest,
    QueueSkip,
)
from judgements.queue import (
    QueueWait,
    lease_release,
    may_rate,
    queue_next_pair,
    queue_restore_pair,
    queue_skip_pair,
    queue_wait,
    rateable_projects,
    rater_progress,
    rating_page,
)
from tests.factories import (
    DocumentFactory,
    HitFactory,
    JudgementFactory,
    ProjectFactory,
    QueryFactory,
    ResultListFactory,
    UserFactory,
)

# alice (rater) and bob (rater) share the queue of the "outdoor" project; neither sees
# the other's grades, but each pair is handed out only as often as the project needs.


def ranked(result_list, query, documents):
    """Hits of ``documents`` for ``query`` in ``result_list``, ranks 1, 2, ..."""
    for rank, document in enumerate(documents, start=1):
        HitFactory(result_list=result_list, query=query, document=document, rank=rank)


@pytest.fixture
def docs(project):
    return [DocumentFactory(project=project, external_id=f"D{n}") for n in range(1, 7)]


@pytest.fixture
def tent(project, docs):
    """One query ranked by one result list: D1..D6 at ranks 1..6."""
    query = QueryFactory(project=project, text="tent")
    ranked(ResultListFactory(project=project, name="bm25"), query, docs)
    return query


def pool(project):
    pairs = QueuePair.objects.filter(project=project)
    return {(pair.document.external_id, pair.best_rank, pair.grades) for pair in pairs}


def next_doc(rater, project, **kwargs):
    pair = queue_next_pair(rater=rater, project=project, **kwargs)
    return pair.document.external_id if pair else None


def answer(rater, query, document, grade=2, kind="grade", **kwargs):
    return JudgementFactory(
        rater=rater, query=query, document=document, grade=grade, kind=kind, **kwargs
    )


def test_the_pool_is_every_pair_in_the_top_pool_depth_of_any_result_list(project, docs):
    project.pool_depth = 2
    project.save()
    query = QueryFactory(project=project, text="tent")
    ranked(ResultListFactory(project=project, name="a"), query, docs[:3])
    ranked(ResultListFactory(project=project, name="b"), query, [docs[2], docs[0]])
    assert pool(project) == {("D1", 1, 0), ("D2", 2, 0), ("D3", 1, 0)}


def test_a_new_result_list_adds_its_unjudged_top_pairs_to_the_pool(project, rater, tent, docs):
    project.pool_depth = 2
    project.save()
    for document in docs[:2]:
        answer(rater, tent, document)
    assert next_doc(rater, project) is None
    newcomer = DocumentFactory(project=project, external_id="NEW")
    ranked(ResultListFactory(project=project, name="new engine"), tent, [docs[0], newcomer])
    assert ("NEW", 2, 0) in pool(project)
    assert next_doc(rater, project) == "NEW"


def test_the_rater_gets_the_best_ranked_pair_they_have_not_answered(project, rater, tent, docs):
    assert next_doc(rater, project) == "D1"
    answer(rater, tent, docs[0])
    assert next_doc(rater, project) == "D2"


def test_best_rank_counts_across_result_lists(project, rater, tent, docs):
    ranked(ResultListFactory(project=project, name="other"), tent, [docs[4]])
    answer(rater, tent, docs[0])
    assert next_doc(rater, project) == "D5"


def test_among_equal_ranks_the_pair_with_fewer_grades_comes_first(project, rater, other_rater):
    project.judges_per_pair = 2
    project.save()
    first, second = QueryFactory(project=project), QueryFactory(project=project)
    documents = [DocumentFactory(project=project), DocumentFactory(project=project)]
    ranked(ResultListFactory(project=project), first, documents[:1])
    ranked(ResultListFactory(project=project), second, documents[1:])
    lower_id = min((first, documents[0]), (second, documents[1]), key=lambda p: p[0].pk)
    answer(other_rater, *lower_id)
    pair = queue_next_pair(rater=rater, project=project)
    assert (pair.query, pair.document) != lower_id


def test_a_pair_leaves_the_queue_once_it_has_enough_grades(project, rater, other_rater, tent):
    project.judges_per_pair = 2
    project.save()
    d1 = tent.hits.get(rank=1).document
    answer(other_rater, tent, d1)
    assert next_doc(rater, project) == "D1"
    answer(UserFactory(roles=["rater"]), tent, d1)
    assert next_doc(rater, project) == "D2"


def test_cant_tell_is_an_answer_but_not_a_grade(project, rater, other_rater, tent, docs):
    answer(other_rater, tent, docs[0], grade=None, kind="cant_tell")
    assert ("D1", 1, 0) in pool(project)
    assert next_doc(other_rater, project) == "D2"
    assert next_doc(rater, project) == "D1"


def test_a_retracted_answer_puts_the_pair_back_in_the_queue(project, rater, tent, docs):
    answer(rater, tent, docs[0])
    answer(rater, tent, docs[0], grade=None, kind="retract")
    assert ("D1", 1, 0) in pool(project)
    assert next_doc(rater, project) == "D1"


def skip(rater, project, query, document):
    return queue_skip_pair(
        rater=rater, project=project, query_id=query.pk, document_id=document.pk
    )


def test_skipped_pairs_come_back_after_every_other_pair(project, rater, tent, docs):
    skip(rater, project, tent, docs[1])
    skip(rater, project, tent, docs[0])
    assert [next_doc(rater, project)] == ["D3"]
    for document in docs[2:]:
        answer(rater, tent, document)
    assert next_doc(rater, project) == "D2"
    answer(rater, tent, docs[1])
    assert next_doc(rater, project) == "D1"


def test_a_pair_skipped_again_goes_to_the_back(project, rater, tent, docs):
    skip(rater, project, tent, docs[0])
    skip(rater, project, tent, docs[1])
    for document in docs[2:]:
        answer(rater, tent, document)
    assert next_doc(rater, project) == "D1"
    skip(rater, project, tent, docs[0])
    assert next_doc(rater, project) == "D2"
    assert QueueSkip.objects.filter(rater=rater).count() == 3


def test_a_skip_is_the_raters_own(project, rater, other_rater, tent, docs):
    skip(rater, project, tent, docs[0])
    assert next_doc(rater, project) == "D2"
    assert next_doc(other_rater, project) == "D1"


def test_a_skip_gives_the_lease_back(project, rater, other_rater, tent, docs):
    assert next_doc(rater, project) == "D1"
    skip(rater, project, tent, docs[0])
    assert QueueLease.objects.filter(rater=rater, document=docs[0]).count() == 0
    assert next_doc(other_rater, project) == "D1"


def test_a_pair_outside_the_pool_cannot_be_skipped(project, rater, tent, docs):
    elsewhere = DocumentFactory(project=project, external_id="not-a-hit")
    with pytest.raises(ValidationError):
        skip(rater, project, tent, elsewhere)
    with pytest.raises(ValidationError):
        queue_skip_pair(rater=rater, project=project, query_id=2**63 - 1, document_id=1)
    assert QueueSkip.objects.count() == 0


def test_moving_on_from_an_answered_pair_is_no_skip(project, rater, tent, docs):
    answer(rater, tent, docs[0])
    assert skip(rater, project, tent, docs[0]) is False
    assert QueueSkip.objects.count() == 0


def test_another_raters_live_lease_holds_the_last_open_slot(project, rater, other_rater, tent):
    assert next_doc(other_rater, project) == "D1"
    assert next_doc(rater, project) == "D2"


def test_an_expired_lease_returns_the_pair_to_the_pool(project, rater, other_rater, tent):
    queue_next_pair(rater=other_rater, project=project)
    QueueLease.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert next_doc(rater, project) == "D1"


def test_a_released_lease_frees_the_slot_at_once(project, rater, other_rater, tent, docs):
    queue_next_pair(rater=other_rater, project=project)
    lease_release(rater=other_rater, query_id=tent.pk, document_id=docs[0].pk)
    assert next_doc(rater, project) == "D1"


def test_asking_again_keeps_the_same_pair_and_one_lease(project, rater, tent):
    assert next_doc(rater, project) == "D1"
    assert next_doc(rater, project) == "D1"
    assert QueueLease.objects.filter(rater=rater).count() == 1


def test_a_rater_holds_one_lease_per_project(project, rater, tent, docs):
    queue_next_pair(rater=rater, project=project)
    answer(rater, tent, docs[0])
    queue_next_pair(rater=rater, project=project)
    leases = QueueLease.objects.filter(rater=rater)
    assert [(lease.document.external_id) for lease in leases] == ["D2"]


def test_a_lease_ends_when_its_holder_gets_another_pair(project, rater, other_rater, tent, docs):
    # alice opened the page on D1 and, without answering, was handed a pair of another
    # project (a second tab): D1 is bob's at once, not in ten minutes.
    assert next_doc(rater, project) == "D1"
    elsewhere = ProjectFactory(slug="elsewhere")
    ranked(
        ResultListFactory(project=elsewhere),
        QueryFactory(project=elsewhere),
        [DocumentFactory(project=elsewhere)],
    )
    assert queue_next_pair(rater=rater, project=elsewhere) is not None
    assert next_doc(other_rater, project) == "D1"
    assert QueueLease.objects.filter(rater=rater).count() == 1


def test_a_lease_ends_when_its_holder_is_handed_a_pair_given_back(
    project, rater, other_rater, tent, docs
):
    assert next_doc(rater, project) == "D1"
    restored = queue_restore_pair(
        rater=rater, project=project, query_id=tent.pk, document_id=docs[3].pk
    )
    assert restored.document == docs[3]
    assert next_doc(other_rater, project) == "D1"


def test_a_pair_given_back_is_not_handed_over_once_another_rater_took_its_slot(
    project, rater, other_rater, tent, docs
):
    answer(rater, tent, docs[0])
    answer(rater, tent, docs[0], grade=None, kind="retract")
    assert next_doc(other_rater, project) == "D1"
    assert (
        queue_restore_pair(rater=rater, project=project, query_id=tent.pk, document_id=docs[0].pk)
        is None
    )


def test_a_leased_pair_says_which_lease_it_is(project, rater, tent, docs):
    pair = queue_next_pair(rater=rater, project=project)
    lease = QueueLease.objects.get(rater=rater)
    assert pair.lease_expires_at == lease.expires_at
    # A release naming an older lease of the same pair leaves the newer one alone.
    older = lease.expires_at - dt.timedelta(seconds=1)
    lease_release(rater=rater, query_id=tent.pk, document_id=docs[0].pk, expires_at=older)
    assert QueueLease.objects.filter(rater=rater).exists()
    lease_release(
        rater=rater, query_id=tent.pk, document_id=docs[0].pk, expires_at=pair.lease_expires_at
    )
    assert not QueueLease.objects.filter(rater=rater).exists()


def test_an_empty_queue_says_which_pairs_other_raters_hold_and_until_when(
    project, rater, other_rater, tent, docs
):
    for document in docs[2:]:
        answer(rater, tent, document)
    assert next_doc(other_rater, project) == "D1"
    assert next_doc(UserFactory(roles=["rater"]), project) == "D2"
    assert next_doc(rater, project) is None
    wait = queue_wait(rater=rater, project=project)
    first_end = QueueLease.objects.order_by("expires_at").first().expires_at
    assert (wait.held, wait.until, wait.minutes) == (2, first_end, 10)
    QueueLease.objects.filter(rater=other_rater).update(
        expires_at=timezone.now() + dt.timedelta(seconds=61)
    )
    assert queue_wait(rater=rater, project=project).minutes == 2


def test_an_empty_queue_with_nothing_held_says_so(project, rater, tent, docs):
    for document in docs:
        answer(rater, tent, document)
    assert next_doc(rater, project) is None
    assert queue_wait(rater=rater, project=project) == QueueWait(held=0, until=None)


def test_raising_judges_per_pair_reopens_complete_pairs(project, rater, other_rater, tent, docs):
    answer(other_rater, tent, docs[0])
    assert next_doc(rater, project) == "D2"
    project.judges_per_pair = 2
    project.save()
    assert next_doc(rater, project) == "D1"


def test_a_shallower_pool_depth_drops_deeper_pairs(project, tent):
    project.pool_depth = 3
    project.save()
    assert {document for document, _, _ in pool(project)} == {"D1", "D2", "D3"}


def test_deleting_a_result_list_drops_the_pairs_only_it_pooled(project, tent, docs):
    ranked(ResultListFactory(project=project, name="short"), tent, [docs[5]])
    assert ("D6", 1, 0) in pool(project)
    tent.hits.filter(result_list__name="bm25").delete()
    assert pool(project) == {("D6", 1, 0)}


def test_grades_judged_before_a_pair_joins_the_pool_are_counted(project, rater, docs):
    query = QueryFactory(project=project, text="stove")
    answer(rater, query, docs[0], grade=3)
    ranked(ResultListFactory(project=project), query, docs[:1])
    assert pool(project) == {("D1", 1, 1)}


def test_the_next_pair_takes_the_same_queries_however_large_the_pool(project, rater, tent):
    with CaptureQueriesContext(connection) as small:
        queue_next_pair(rater=rater, project=project)
    big = QueryFactory(project=project, text="big")
    ranked(ResultListFactory(project=project, name="big"), big, DocumentFactory.create_batch(50))
    with CaptureQueriesContext(connection) as large:
        queue_next_pair(rater=rater, project=project)
    assert len(large) == len(small)


def test_progress_counts_done_left_and_today(project, rater, other_rater, tent, docs):
    answer(rater, tent, docs[0])
    answer(rater, tent, docs[1], grade=None, kind="cant_tell")
    answer(other_rater, tent, docs[2])
    answer(rater, tent, docs[3], created_at=timezone.now() - dt.timedelta(days=2))
    progress = rater_progress(rater=rater, project=project)
    # D1 and D4 are graded, D2 is can't tell (still open), D3 is done by bob.
    assert (progress.done, progress.left, progress.today) == (3, 2, 2)
    assert progress.percent == 60


def test_the_rating_page_read_matches_the_separate_reads(project, rater, other_rater, tent, docs):
    answer(rater, tent, docs[0])
    answer(rater, tent, docs[1], grade=None, kind="cant_tell")
    answer(other_rater, tent, docs[2])
    page = rating_page(rater, project.slug)
    assert page.project == project
    assert page.project.scale == project.scale
    assert page.progress == rater_progress(rater=rater, project=project)
    assert page.roles == {"rater"}


def test_the_rating_page_read_hides_a_project_that_names_other_raters(
    project, rater, other_rater, tent
):
    project.raters.set([other_rater])
    assert rating_page(rater, project.slug).project is None
    assert rating_page(other_rater, project.slug).project == project


def test_the_rating_page_read_gives_the_roles_for_an_unknown_slug(outsider, analyst):
    assert rating_page(outsider, "no-such-project").roles == set()
    assert rating_page(analyst, "no-such-project").roles == {"analyst"}
    assert rating_page(analyst, "no-such-project").project is None


def test_the_picked_pair_comes_with_its_query_and_document(project, rater, tent, docs):
    docs[0].fields = {"brand": "Ridgeline", "weight_g": 1200}
    docs[0].save()
    pair = queue_next_pair(rater=rater, project=project)
    with CaptureQueriesContext(connection) as reads:
        assert (pair.query.text, pair.document.external_id) == ("tent", "D1")
        assert pair.document.fields == {"brand": "Ridgeline", "weight_g": 1200}
    assert len(reads) == 0
    assert (pair.query, pair.document, pair.answered) == (tent, docs[0], {})


def test_a_project_naming_its_raters_is_only_for_them(project, rater, other_rater, outsider):
    project.raters.set([other_rater])
    assert not may_rate(rater, project)
    assert may_rate(other_rater, project)
    assert list(rateable_projects(outsider)) == []
    assert list(rateable_projects(rater)) == []
    project.raters.clear()
    assert may_rate(rater, project)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_raters_asking_at_the_same_moment_never_share_the_last_slot():
    project = ProjectFactory(judges_per_pair=1)
    query = QueryFactory(project=project)
    ranked(ResultListFactory(project=project), query, DocumentFactory.create_batch(3))
    raters = [UserFactory(username=f"rater{n}", roles=["rater"]) for n in range(8)]
    handed = run_at_once(raters, lambda rater: queue_next_pair(rater=rater, project=project))
    pairs = [pair.document_id for pair in handed if pair is not None]
    assert len(pairs) == 3
    assert len(set(pairs)) == 3
    assert QueueLease.objects.count() == 3


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_grade_counts_stay_exact_when_raters_grade_one_pair_at_once():
    project = ProjectFactory(judges_per_pair=10)
    query = QueryFactory(project=project)
    document = DocumentFactory(project=project)
    ranked(ResultListFactory(project=project), query, [document])
    raters = [UserFactory(username=f"rater{n}", roles=["rater"]) for n in range(8)]
    run_at_once(raters, lambda rater: answer(rater, query, document))
    pair = QueuePair.objects.get()
    assert (pair.grades, pair.needed) == (8, 2)
    assert Judgement.objects.count() == 8
    assert_pool_matches_the_log(project)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_pair_locked_by_a_running_write_is_passed_over_not_waited_for(rater):
    project = ProjectFactory()
    query = QueryFactory(project=project)
    ranked(ResultListFactory(project=project), query, DocumentFactory.create_batch(2))
    first = QueuePair.objects.get(best_rank=1)
    locked, release = threading.Event(), threading.Event()

    def hold_the_first_pair():
        # As a grade or an import of that pair does until it commits.
        with transaction.atomic():
            QueuePair.objects.select_for_update().get(pk=first.pk)
            locked.set()
            release.wait(timeout=10)
        connection.close()

    holder = threading.Thread(target=hold_the_first_pair)
    holder.start()
    try:
        assert locked.wait(timeout=10)
        assert queue_next_pair(rater=rater, project=project).best_rank == 2
    finally:
        release.set()
        holder.join(timeout=10)


def run_at_once(raters, work):
    """Run ``work(rater)`` in one thread per rater, released together; return the results."""
    barrier = threading.Barrier(len(raters))
    results, errors = [None] * len(raters), []

    def run(position, rater):
        try:
            barrier.wait(timeout=10)
            results[position] = work(rater)
        except Exception as error:  # Collected so the main thread can report it.
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=item) for item in enumerate(raters)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == []
    return results


def assert_pool_matches_the_log(project):
    """The trigger-kept pool and tallies equal a recomputation from hits, events and
    analysts' requests for more grades (a requested pair is pooled at any depth)."""
    wanted = {}
    for request in QueueRequest.objects.filter(project=project):
        pair = (request.query_id, request.document_id)
        wanted[pair] = max(wanted.get(pair, 0), request.wanted)
    best = {}
    for hit in Hit.objects.filter(result_list__project=project):
        pair = (hit.query_id, hit.document_id)
        if hit.rank <= project.pool_depth or pair in wanted:
            best[pair] = min(best.get(pair, hit.rank), hit.rank)
    answers = {}
    for event in Judgement.objects.for_project(project).human().latest_per_rater():
        if event.kind != "retract":
            day = event.created_at.astimezone(dt.UTC).date().isoformat()
            answers.setdefault((event.query_id, event.document_id), {})[event.rater_id] = (
                event.kind,
                day,
            )
    expected = {}
    for pair, rank in best.items():
        current = answers.get(pair, {})
        grades = sum(kind == "grade" for kind, _ in current.values())
        answered = {str(rater): day for rater, (_, day) in current.items()}
        needed = max(project.judges_per_pair, wanted.get(pair, 0)) - grades
        expected[pair] = (rank, grades, needed, answered, wanted.get(pair, 0))
    stored = {
        (pair.query_id, pair.document_id): (
            pair.best_rank,
            pair.grades,
            pair.needed,
            pair.answered,
            pair.wanted,
        )
        for pair in QueuePair.objects.filter(project=project)
    }
    assert stored == expected
    assert_tallies_match(project, expected)


def assert_tallies_match(project, expected):
    open_pairs = sum(needed > 0 for _, _, needed, _, _ in expected.values())
    tally = QueuePoolTally.objects.filter(project=project).first()
    assert (tally.open_pairs if tally else 0) == open_pairs
    today = timezone.now().astimezone(dt.UTC).date().isoformat()
    per_rater = {}
    for _, _, needed, answered, _ in expected.values():
        for rater, day in answered.items():
            done, still_open, on_day = per_rater.get(int(rater), (0, 0, 0))
            per_rater[int(rater)] = (done + 1, still_open + (needed > 0), on_day + (day == today))
    tallies = {
        tally.rater_id: (
            tally.answered,
            tally.answered_open,
            tally.answered_on_day if str(tally.day) == today else 0,
        )
        for tally in QueueRaterTally.objects.filter(project=project)
    }
    assert tallies == per_rater


def test_the_pool_and_tallies_match_the_log_of_the_demo(db):
    call_command("load_demo", stdout=StringIO())
    project = Project.objects.get(slug="outdoor-gear")
    assert_pool_matches_the_log(project)
    project.pool_depth = 5
    project.judges_per_pair = 1
    project.save()
    assert_pool_matches_the_log(project)


def test_the_pool_and_tallies_match_the_log_of_generated_load(db):
    options = {"queries": 20, "hits_per_query": 10, "judgements": 500, "raters": 4}
    call_command("generate_load", stdout=StringIO(), **options)
    assert_pool_matches_the_log(Project.objects.get(slug="generated-load"))


def test_replacing_a_generated_project_leaves_no_queue_rows_behind(db):
    options = {"queries": 5, "hits_per_query": 10, "judgements": 50, "raters": 2}
    call_command("generate_load", stdout=StringIO(), **options)
    first = Project.objects.get(slug="generated-load")
    pair = QueuePair.objects.filter(project=first).first()
    skipper = UserFactory(roles=["rater"])
    queue_skip_pair(
        rater=skipper, project=first, query_id=pair.query_id, document_id=pair.document_id
    )
    queue_next_pair(rater=skipper, project=first)
    call_command("generate_load", stdout=StringIO(), **options)
    project = Project.objects.get(slug="generated-load")
    assert not QueueSkip.objects.exists()
    assert not QueueLease.objects.exists()
    assert set(QueuePair.objects.values_list("project", flat=True)) == {project.pk}
    assert set(QueuePoolTally.objects.values_list("project", flat=True)) == {project.pk}
    assert set(QueueRaterTally.objects.values_list("project", flat=True)) == {project.pk}
