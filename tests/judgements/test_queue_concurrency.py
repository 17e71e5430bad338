"""Raters grading what the queue hands them, at once, on real PostgreSQL.

A rater handed a pair by the queue holds a slot on it (a lease), so their grade of that
pair is accepted, however the other raters' grades and leases interleave with it; and
each pair still ends with exactly ``judges_per_pair`` grades. Each rater is a thread
with its own database connection.
"""

import threading
from collections import Counter
from contextlib import contextmanager

import pytest
from django.db import connection, transaction

from judgements.models import Document, Hit, Judgement, Project, Query, QueueLease, QueuePair
from judgements.queue import picking, queue_next_pair
from judgements.services import PairComplete, judgement_submit
from tests.factories import ResultListFactory, UserFactory
from tests.judgements.test_queue import assert_pool_matches_the_log


@pytest.fixture(autouse=True)
def refreshes_queued_for_a_worker(settings):
    """Grades queue their metrics refresh as in production, for a worker that does not
    run here: the raters' threads measure grading, not the refreshes the tests' default
    backend would run in each of them on every commit."""
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}


def project_with_pairs(queries: int, hits_per_query: int, judges_per_pair: int) -> Project:
    """A project whose pool is ``queries`` x ``hits_per_query`` pairs, built in bulk."""
    project = Project.objects.create(
        name="Load", slug="load", judges_per_pair=judges_per_pair, pool_depth=hits_per_query
    )
    result_list = ResultListFactory(project=project)
    query_rows = Query.objects.bulk_create(
        Query(project=project, text=f"query {n}") for n in range(queries)
    )
    documents = Document.objects.bulk_create(
        Document(project=project, external_id=f"D{n}", title=f"Document {n}")
        for n in range(queries * hits_per_query)
    )
    Hit.objects.bulk_create(
        Hit(
            result_list=result_list,
            query=query,
            document=documents[number * hits_per_query + rank - 1],
            rank=rank,
        )
        for number, query in enumerate(query_rows)
        for rank in range(1, hits_per_query + 1)
    )
    return project


def grade(rater, project: Project, pair: QueuePair) -> Judgement:
    """Grade a pair as the API does (``POST /api/judgements/create/``)."""
    judgement, _ = judgement_submit(
        rater=rater,
        project=project,
        query=pair.query,
        document=pair.document,
        kind=Judgement.Kind.GRADE,
        grade=2,
        source=Judgement.Source.API,
        deduplicate=False,
    )
    return judgement


def raters_named(prefix: str, count: int) -> list:
    return [UserFactory(username=f"{prefix}{n:02d}", roles=["rater"]) for n in range(count)]


def at_once(raters, work) -> None:
    """Run ``work(rater)`` in one thread per rater, each with its own connection,
    released together; fail on any exception and on a thread still running."""
    barrier = threading.Barrier(len(raters))
    errors = []

    def run(rater):
        try:
            barrier.wait(timeout=30)
            work(rater)
        except Exception as error:  # Collected so the main thread can report it.
            errors.append(repr(error))
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(rater,)) for rater in raters]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert errors == []
    assert not any(thread.is_alive() for thread in threads)


def grade_what_the_queue_hands_out(
    raters, project, rounds: int | None = None
) -> tuple[list[str], list[str]]:
    """Each rater loops next pair -> grade it, until the queue is empty for them (or for
    ``rounds`` rounds); returns the refusals of handed pairs, which should be none, and
    the raters whose queue ran out."""
    refused, ran_out = [], []

    def work(rater):
        done = 0
        while rounds is None or done < rounds:
            pair = queue_next_pair(rater=rater, project=project)
            if pair is None:
                ran_out.append(f"{rater.username} after {done} grades")
                return
            try:
                grade(rater, project, pair)
            except PairComplete:
                refused.append(f"{rater.username}: pair {pair.query_id}/{pair.document_id}")
            done += 1

    at_once(raters, work)
    return refused, ran_out


def grades_per_pair(project: Project) -> Counter:
    events = Judgement.objects.filter(query__project=project, kind=Judgement.Kind.GRADE)
    return Counter(events.values_list("query_id", "document_id"))


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_twenty_raters_grading_what_the_queue_hands_them_are_never_refused():
    project = project_with_pairs(queries=15, hits_per_query=10, judges_per_pair=2)
    raters = raters_named("grader", 20)
    refused, ran_out = grade_what_the_queue_hands_out(raters, project)
    assert refused == []
    assert len(ran_out) == 20
    per_pair = grades_per_pair(project)
    assert len(per_pair) == 150
    assert set(per_pair.values()) == {2}
    assert not QueuePair.objects.filter(project=project, needed__gt=0).exists()
    assert not QueueLease.objects.exists()
    assert_pool_matches_the_log(project)


@contextmanager
def held_open(work):
    """Run ``work()`` in a transaction of another thread, each with its own connection,
    and keep that transaction open (its row locks held) until the block ends; then it
    commits."""
    ready, release, errors = threading.Event(), threading.Event(), []

    def run():
        try:
            with transaction.atomic():
                work()
                ready.set()
                assert release.wait(timeout=30)
        except Exception as error:  # Collected so the main thread can report it.
            errors.append(repr(error))
        finally:
            ready.set()
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert ready.wait(timeout=30)
        assert errors == []
        yield
    finally:
        release.set()
        thread.join(timeout=30)
    assert errors == []


def in_a_thread(work) -> threading.Thread:
    """Start ``work()`` in a thread with its own connection."""

    def run():
        try:
            work()
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_grade_waiting_for_another_grade_of_the_same_pair_is_accepted():
    """Two raters hold the two slots of a pair; bob's grade waits for the pair's row
    while alice's grade of it commits. Bob's slot is his: his grade is accepted."""
    project = project_with_pairs(queries=1, hits_per_query=1, judges_per_pair=2)
    alice, bob = raters_named("holder", 2)
    handed = [queue_next_pair(rater=rater, project=project) for rater in (alice, bob)]
    assert handed[0].pk == handed[1].pk
    pair = handed[0]
    outcome = {}

    def bob_grades():
        try:
            outcome["bob"] = grade(bob, project, pair).grade
        except PairComplete as refusal:
            outcome["bob"] = refusal.messages[0]

    with held_open(lambda: grade(alice, project, pair)):
        second = in_a_thread(bob_grades)
        wait_until_a_session_waits_for_a_row_lock()
    second.join(timeout=30)
    assert outcome == {"bob": 2}
    assert grades_per_pair(project) == {(pair.query_id, pair.document_id): 2}


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_rater_asking_while_the_last_open_pair_is_being_graded_waits_for_it():
    """The last open pair needs two grades; alice's is being written (the pair's row is
    held) when bob asks for a pair. Bob waits for it and is handed it, not told the
    queue is empty, which would leave it one grade short once every rater was told so."""
    project = project_with_pairs(queries=1, hits_per_query=1, judges_per_pair=2)
    alice, bob = raters_named("last", 2)
    pair = queue_next_pair(rater=alice, project=project)
    handed = {}

    def bob_asks():
        handed["bob"] = queue_next_pair(rater=bob, project=project)

    with held_open(lambda: grade(alice, project, pair)):
        second = in_a_thread(bob_asks)
        wait_until_a_session_waits_for_a_row_lock(unless=lambda: "bob" in handed)
    second.join(timeout=30)
    assert handed["bob"] is not None, "bob was told the queue is empty"
    assert handed["bob"].pk == pair.pk
    grade(bob, project, handed["bob"])
    assert grades_per_pair(project) == {(pair.query_id, pair.document_id): 2}


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_rater_waits_for_a_held_pair_only_so_long_then_is_told_none_is_free(monkeypatch):
    """An import holds the only open pair until it commits: the rater's wait ends after
    HELD_PAIR_WAIT with no pair, no lease and the rater's transaction still usable."""
    monkeypatch.setattr(picking, "HELD_PAIR_WAIT", "200ms")
    project = project_with_pairs(queries=1, hits_per_query=1, judges_per_pair=1)
    (rater,) = raters_named("patient", 1)

    def import_holds_the_pair():
        QueuePair.objects.select_for_update().filter(project=project).get()

    with held_open(import_holds_the_pair):
        with transaction.atomic():
            assert queue_next_pair(rater=rater, project=project) is None
            assert QueuePair.objects.filter(project=project, needed=1).exists()
        assert not QueueLease.objects.exists()
    assert queue_next_pair(rater=rater, project=project) is not None


def wait_until_a_session_waits_for_a_row_lock(timeout: float = 30, unless=lambda: False) -> None:
    """Block until another session of this database waits for a lock (bob's grade
    queued behind alice's open transaction), or until ``unless()`` is true (bob did not
    wait, which the test then reports)."""
    waiting = threading.Event()
    with connection.cursor() as cursor:
        for _ in range(int(timeout / 0.05)):
            if unless():
                return
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0]:
                return
            waiting.wait(0.05)
    raise AssertionError("bob's grade never waited for alice's")


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_at_scale_raters_grading_handed_pairs_are_never_refused():
    """3,000 pairs: twenty raters grade 25 handed pairs each, never refused, and no pair
    takes more than its two grades."""
    project = project_with_pairs(queries=300, hits_per_query=10, judges_per_pair=2)
    raters = raters_named("scale", 20)
    refused, ran_out = grade_what_the_queue_hands_out(raters, project, rounds=25)
    assert refused == []
    assert ran_out == []  # Thousands of pairs are still open: nobody is told "done".
    per_pair = grades_per_pair(project)
    assert sum(per_pair.values()) == 20 * 25
    assert max(per_pair.values()) == 2
    assert_pool_matches_the_log(project)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_raters_asking_at_once_are_never_told_the_queue_is_empty_while_pairs_are_open():
    """Twenty raters ask for a pair sixty times each, at once, on 3,000 open pairs.

    A pick can be out of date by the time its pair is locked (other raters' leases
    committed meanwhile took the pair's slot); each such miss is another rater's lease,
    so the queue tries the next pair rather than saying it is empty.
    """
    project = project_with_pairs(queries=300, hits_per_query=10, judges_per_pair=1)
    raters = raters_named("asker", 20)
    empty = []

    def ask_again_and_again(rater):
        for number in range(60):
            if queue_next_pair(rater=rater, project=project) is None:
                empty.append(f"{rater.username}, ask {number}")

    at_once(raters, ask_again_and_again)
    assert empty == []
    leases = QueueLease.objects.values_list("query_id", "document_id")
    assert len(leases) == len(set(leases)) == 20  # One slot per pair, one pair per rater.
