"""The packed blocks (judgements_rankedblock): a whole list in a few rows, always the rows
they join, whoever fills them and whenever.

Blocks of three query ids here (BLOCK_QUERIES), so that a few queries span several
blocks, some of them partly empty, with one to four hits per query at random ranks.
"""

import itertools
import threading

import numpy as np
import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from judgements import packed
from judgements.derived import oracles
from judgements.models import QueryGrades, RankedBlock
from metrics import selectors
from metrics.core.consensus import POLICIES
from metrics.evaluate import result_list_evaluate
from metrics.registry import MetricSpec
from tests.factories import JudgementFactory, UserFactory
from tests.judgements.test_grade_summaries import random_hits
from tests.judgements.test_pair_grades import random_events
from tests.metrics.test_selectors import assert_same_list


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(packed, "BLOCK_QUERIES", 3)


def stored_rows(project) -> dict:
    """The RankedGrades rows of the project, as oracles.stored_summaries reads them."""
    return oracles.stored_summaries(project)[2]


def packed_differences(project) -> list:
    """The differences oracles finds in the packed rows and blocks (the tests here keep
    no stored series or revision counts)."""
    tables = ("judgements_rankedgrades", "judgements_rankedblock")
    return [d for d in oracles.differences(project) if d.table in tables]


def test_rank_major_and_back_give_the_values_again():
    rng = np.random.default_rng(1)
    lengths = rng.integers(0, 6, size=40)
    blocks = np.sort(rng.integers(0, 9, size=40))
    values = rng.random(int(lengths.sum()))
    starts = np.cumsum(lengths) - lengths
    parts = []
    for block in np.unique(blocks):
        mine = np.flatnonzero(blocks == block)
        segments = [values[starts[i] : starts[i] + lengths[i]] for i in mine]
        by_rank, ends = packed.rank_major(np.concatenate(segments), lengths[mine])
        # Rank by rank: the r-th values of the segments that have one, in segment order.
        expected = [s[r] for r in range(max(lengths[mine])) for s in segments if r < len(s)]
        assert by_rank.tolist() == expected
        assert ends[-1] == len(expected) if len(ends) else expected == []
        parts.append(by_rank)

    assert packed.query_major(np.concatenate(parts), lengths, blocks).tolist() == values.tolist()


def test_rank_ends_count_the_values_of_the_first_ranks():
    by_rank, ends = packed.rank_major(np.arange(6.0), np.array([3, 1, 2]))

    assert by_rank.tolist() == [0.0, 3.0, 4.0, 1.0, 5.0, 2.0]
    assert ends.tolist() == [3, 5, 6]


@pytest.mark.parametrize("seed", [21, 22])
def test_the_blocks_join_the_rows_and_read_as_the_log_for_every_depth(project, seed):
    random_events(project, seed=seed)
    random_events(project, seed=seed + 1)
    random_hits(project, seed=seed)
    packed.packed_fill(project.pk)
    rows = stored_rows(project)
    blocks = oracles.stored_blocks(project)
    assert blocks == rows and len(rows) > 0
    assert RankedBlock.objects.count() > len(POLICIES) * 2  # Several blocks per list.
    now = timezone.now()

    for policy in POLICIES:
        pairs = selectors.logged_pair_grades(project.pk, as_of=now, policy=policy)
        for result_list in project.result_lists.all():
            for depth in (None, 1, 2, 3, 9):
                whole = selectors.stored_result_list_grades(
                    result_list.pk, project.pk, as_of=now, policy=policy, depth=depth
                )
                logged = selectors.result_list_grades(result_list.pk, pairs, depth=depth)
                assert_same_list(whole, logged)


def test_a_fill_of_one_query_writes_its_blocks_again_and_no_other(project):
    random_events(project, seed=23)
    random_hits(project, seed=23, lists=1)
    packed.packed_fill(project.pk)
    before = {row.pk: row for row in RankedBlock.objects.all()}
    query = project.queries.order_by("pk")[1]
    rater = UserFactory(username="late", roles=["rater"])
    document = project.documents.order_by("pk").first()

    JudgementFactory(rater=rater, query=query, document=document, grade=3)
    assert packed.packed_fill(project.pk) == 1

    after = {row.pk: row for row in RankedBlock.objects.all()}
    block = query.pk // packed.BLOCK_QUERIES
    kept = {pk for pk, row in before.items() if row.block != block}
    assert kept <= set(after)  # The other blocks' rows were not written again.
    assert {row.block for pk, row in after.items() if pk not in before} == {block}
    assert oracles.stored_blocks(project) == stored_rows(project)
    assert packed_differences(project) == []


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_list_reads_from_the_pair_grades_while_another_fill_holds_its_block(project):
    # Another transaction holds the block of a stale query: the reader leaves the query
    # stale rather than wait, and the evaluation lays the list out from the pair grades.
    random_events(project, seed=24)
    random_hits(project, seed=24, lists=1)
    packed.packed_fill(project.pk)
    result_list = project.result_lists.get()
    query = project.queries.order_by("pk").first()
    QueryGrades.objects.filter(query=query).update(stale=True)
    spec = MetricSpec(k=3)
    held, release = threading.Event(), threading.Event()

    def hold_the_block():
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                block = query.pk // packed.BLOCK_QUERIES
                cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [packed.BLOCK_LOCK, block])
                held.set()
                release.wait(timeout=30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_the_block)
    holder.start()
    try:
        assert held.wait(timeout=30)
        now = timezone.now()
        read = selectors.stored_result_list_grades(
            result_list.pk, project.pk, as_of=now, policy="mean", depth=3
        )
        _, result = result_list_evaluate(result_list, spec, as_of=now)
    finally:
        release.set()
        holder.join(timeout=30)

    assert read is None
    assert QueryGrades.objects.get(query=query).stale
    pairs = selectors.logged_pair_grades(project.pk, as_of=now, policy="mean")
    _, logged = result_list_evaluate(result_list, spec, as_of=now, pairs=pairs)
    assert result.ndcg.tobytes() == logged.ndcg.tobytes() and len(result.ndcg) > 0


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_readers_fill_behind_a_committed_fill_of_its_block_writes_nothing(project):
    # A dashboard reads in one REPEATABLE READ snapshot. Another fill writes the block
    # of two stale queries for one of them and commits after that snapshot began: the
    # reader's fill of the other would write the block from rows its snapshot no
    # longer holds, so PostgreSQL refuses it, and the reader's fill writes nothing.
    random_events(project, seed=25)
    random_hits(project, seed=25, lists=1)
    packed.packed_fill(project.pk)
    result_list = project.result_lists.get()
    # Three consecutive ids: two of them share a block of three.
    queries = list(project.queries.order_by("pk"))
    first, second = next(
        (a, b)
        for a, b in itertools.pairwise(queries)
        if a.pk // packed.BLOCK_QUERIES == b.pk // packed.BLOCK_QUERIES
    )
    QueryGrades.objects.filter(query__in=[first, second]).update(stale=True)

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cursor.execute("SELECT count(*) FROM judgements_rankedblock")  # The snapshot.

        def other_fill():
            packed.packed_fill(project.pk, [first.pk])
            connections["default"].close()

        filler = threading.Thread(target=other_fill)
        filler.start()
        filler.join(timeout=30)

        assert packed.packed_fill(project.pk, [second.pk], wait=False) == 0
        assert QueryGrades.objects.get(query=second).stale
        now = timezone.now()
        assert (
            selectors.stored_result_list_grades(
                result_list.pk, project.pk, as_of=now, policy="mean", depth=None
            )
            is None
        )

    assert packed.packed_fill(project.pk) == 1
    assert packed_differences(project) == []
