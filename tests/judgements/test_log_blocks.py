"""The packed log (judgements_logblock): past moments replayed from spans written from the
log, always the log's own replay, whoever writes the log and whenever."""

import datetime as dt
import threading

import numpy as np
import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from judgements import log_blocks, sql
from judgements.models import Judgement, LogBlock, LogBlockMark
from metrics import log_replay, selectors
from metrics.core.consensus import POLICIES
from tests.factories import JudgementFactory, ProjectFactory, UserFactory
from tests.holding import advisory_lock, held_elsewhere
from tests.judgements.test_pair_grades import random_events
from tests.metrics.test_selectors import assert_same, orm_pair_grades


def moments(project) -> list[dt.datetime]:
    """Before the first event, at a dozen events' times (ties included), after the last."""
    times = sorted(
        set(Judgement.objects.filter(query__project=project).values_list("created_at", flat=True))
    )
    return [times[0] - dt.timedelta(seconds=1), *times[:: max(1, len(times) // 12)], times[-1]]


def blocks_of(project) -> set[int]:
    return {pk // log_blocks.BLOCK_QUERIES for pk in project.queries.values_list("pk", flat=True)}


def next_queries_in_one_block() -> None:
    """Query ids go on from the next block's first: the few queries a test creates next
    share one block, however many queries earlier tests created."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence('judgements_query', 'id'),"
            " (coalesce((SELECT max(id) FROM judgements_query), 0) / %(width)s + 1)"
            " * %(width)s)",
            {"width": log_blocks.BLOCK_QUERIES},
        )


def assert_the_logs_grades(project, moment, policy="mean"):
    arguments = {"as_of": moment, "policy": policy}
    assert_same(
        selectors.logged_pair_grades(project.pk, **arguments),
        orm_pair_grades(project, **arguments),
    )


def test_the_triggers_divide_query_ids_by_the_blocks_width():
    text = sql.current("log_blocks")
    assert text.count(f"(query_id / {log_blocks.BLOCK_QUERIES})::int4 AS block") == 2


@pytest.mark.parametrize("policy", POLICIES)
def test_the_spans_give_the_logs_grades_at_every_moment(project, policy):
    random_events(project, seed=31)
    random_events(project, seed=32, raters=3)
    some = sorted(project.queries.values_list("pk", flat=True))[::2]

    found = log_blocks.spans(project.pk)
    some_found = log_blocks.spans(project.pk, query_ids=some)

    assert found is not None and len(found.keys) > 0
    assert 0 < len(some_found.keys) < len(found.keys)
    assert set(LogBlock.objects.values_list("block", flat=True)) == blocks_of(project)
    assert not LogBlockMark.objects.exists()
    for moment in moments(project):
        assert_same(
            log_replay.spans_pair_grades(found, moment, policy),
            orm_pair_grades(project, as_of=moment, policy=policy),
        )
        assert_same(
            log_replay.spans_pair_grades(some_found, moment, policy),
            orm_pair_grades(project, as_of=moment, policy=policy, query_ids=some),
        )


def test_a_new_event_marks_its_block_and_the_next_read_writes_it_again(project):
    random_events(project, seed=33)
    assert log_blocks.spans(project.pk) is not None
    written = LogBlock.objects.get().keys
    pair = Judgement.objects.filter(query__project=project, kind="grade").first()
    rater = UserFactory(username="late", roles=["rater"])
    # A grade now, and one dated in the past (imports keep their time stamps).
    JudgementFactory(rater=rater, query=pair.query, document=pair.document, grade=3)
    JudgementFactory(
        rater=rater, query=pair.query, document=pair.document, grade=0, created_at=pair.created_at
    )

    assert set(LogBlockMark.objects.values_list("block", flat=True)) == blocks_of(project)
    for moment in [*moments(project), timezone.now()]:
        assert_the_logs_grades(project, moment)
    assert not LogBlockMark.objects.exists()
    assert bytes(LogBlock.objects.get().keys) != bytes(written)


def test_marks_of_a_block_do_not_pile_up_while_nobody_reads_a_past_moment(project):
    random_events(project, seed=40)
    assert log_blocks.spans(project.pk) is not None
    pair = Judgement.objects.filter(query__project=project).first()
    rater = UserFactory(username="busy", roles=["rater"])

    for grade in [0, 1, 2, 3, 2]:
        JudgementFactory(rater=rater, query=pair.query, document=pair.document, grade=grade)

    assert LogBlockMark.objects.count() == 1
    for moment in [*moments(project), timezone.now()]:
        assert_the_logs_grades(project, moment)


def test_removed_events_mark_their_block(project):
    random_events(project, seed=34)
    assert log_blocks.spans(project.pk) is not None
    query = project.queries.order_by("pk").first()

    Judgement.objects.filter(query=query).delete()

    assert LogBlockMark.objects.filter(block=query.pk // log_blocks.BLOCK_QUERIES).exists()
    for moment in moments(project):
        assert_the_logs_grades(project, moment, "median")


def test_machine_judges_events_mark_nothing(project):
    random_events(project, seed=35)
    assert log_blocks.spans(project.pk) is not None
    pair = Judgement.objects.filter(query__project=project).first()

    JudgementFactory(
        rater=UserFactory(username="bot"),
        query=pair.query,
        document=pair.document,
        grade=3,
        source="machine",
    )

    assert not LogBlockMark.objects.exists()
    assert_the_logs_grades(project, timezone.now())


@pytest.mark.parametrize("seed", range(20))
def test_a_blocks_spans_are_cut_to_the_queries_asked_for(seed):
    """Whole runs of the queries asked for, nothing of the others, in order."""
    rng = np.random.default_rng(seed)
    queries = np.sort(rng.choice(np.arange(1, 300), size=60, replace=False))
    keys = np.sort((queries[rng.integers(0, 60, 500)] << 32) | rng.integers(1, 9, 500))
    found = log_blocks.Spans(keys, keys + 1, keys + 2, (keys % 4).astype(np.int16))
    asked = np.sort(rng.choice(queries, size=int(rng.integers(0, 61)), replace=False))

    cut = log_blocks._of_queries(found, asked)

    wanted = np.isin(keys >> 32, asked)
    assert cut.keys.tolist() == keys[wanted].tolist()
    assert cut.starts.tolist() == (keys[wanted] + 1).tolist()
    assert cut.grades.tolist() == (keys[wanted] % 4).tolist()


def test_projects_whose_queries_share_a_block_read_their_own_events(db):
    first = ProjectFactory(name="First", slug="first")
    second = ProjectFactory(name="Second", slug="second")
    random_events(first, seed=36)
    random_events(second, seed=37)
    assert blocks_of(first) & blocks_of(second)

    for project in (first, second):
        for moment in moments(project):
            assert_the_logs_grades(project, moment, "quepid")


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_block_another_transaction_holds_is_replayed_from_the_log(project):
    next_queries_in_one_block()
    random_events(project, seed=38)
    [block] = blocks_of(project)
    with held_elsewhere(lambda: advisory_lock(log_blocks.BLOCK_LOCK, block)):
        found = log_blocks.spans(project.pk)
        for moment in moments(project):
            assert_the_logs_grades(project, moment)

    assert found is None and not LogBlock.objects.exists()
    assert log_blocks.spans(project.pk) is not None


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_snapshot_behind_another_writer_of_a_block_writes_nothing(project):
    # A dashboard reads in one REPEATABLE READ snapshot, in which the block is missing.
    # Another reader writes it, and a grade marks it, after the snapshot began: written
    # from the snapshot the block is refused; read there, the grades are the snapshot's.
    next_queries_in_one_block()
    random_events(project, seed=39)
    [block] = blocks_of(project)
    pair = Judgement.objects.filter(query__project=project).first()
    rater = UserFactory(username="late", roles=["rater"])

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cursor.execute("SELECT count(*) FROM judgements_logblock")  # The snapshot.

        def write_then_grade():
            assert log_blocks.spans(project.pk) is not None
            JudgementFactory(rater=rater, query=pair.query, document=pair.document, grade=3)
            connections["default"].close()

        other = threading.Thread(target=write_then_grade)
        other.start()
        other.join(timeout=30)

        assert not log_blocks.blocks_write([block])
        assert log_blocks.spans(project.pk) is None
        now = timezone.now()
        before = orm_pair_grades(project, as_of=now, policy="mean")
        assert_same(selectors.logged_pair_grades(project.pk, as_of=now, policy="mean"), before)

    assert LogBlockMark.objects.filter(block=block).exists()
    assert_the_logs_grades(project, timezone.now())
    assert not LogBlockMark.objects.exists()


def test_a_few_queries_are_replayed_from_the_log_without_writing_a_block(project):
    random_events(project, seed=41)
    query = project.queries.order_by("pk").first()
    arguments = {"as_of": timezone.now(), "policy": "mean", "query_ids": [query.pk]}

    assert_same(
        selectors.logged_pair_grades(project.pk, **arguments),
        orm_pair_grades(project, **arguments),
    )
    assert not LogBlock.objects.exists()
