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

from judgements import block_layout as layout
from judgements import packed
from judgements.derived import oracles
from judgements.models import QueryGrades, RankedBlock
from metrics import packed_reads, selectors
from metrics.core.consensus import POLICIES
from metrics.evaluate import result_list_evaluate
from metrics.registry import MetricSpec
from tests.factories import JudgementFactory, UserFactory
from tests.holding import advisory_lock, held_elsewhere
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
        by_rank, ends = layout.rank_major(np.concatenate(segments), lengths[mine])
        # Rank by rank: the r-th values of the segments that have one, in segment order.
        expected = [s[r] for r in range(max(lengths[mine])) for s in segments if r < len(s)]
        assert by_rank.tolist() == expected
        assert ends[-1] == len(expected) if len(ends) else expected == []
        parts.append(by_rank)

    assert layout.query_major(np.concatenate(parts), lengths, blocks).tolist() == values.tolist()


@pytest.mark.parametrize("length", [1, 4])
def test_segments_of_one_length_come_back_from_blocks_of_any_size(length):
    # A top k every query fills: blocks of 3, 3, 1, 3 and 2 segments (runs of one size
    # and blocks alone) come back segment after segment.
    blocks = np.repeat([5, 6, 7, 9, 12], [3, 3, 1, 3, 2])
    lengths = np.full(len(blocks), length)
    values = np.arange(float(lengths.sum()))
    starts = np.cumsum(lengths) - lengths
    parts = []
    for block in np.unique(blocks):
        mine = np.flatnonzero(blocks == block)
        segments = np.concatenate([values[starts[i] : starts[i] + length] for i in mine])
        parts.append(layout.rank_major(segments, lengths[mine])[0])

    assert layout.query_major(np.concatenate(parts), lengths, blocks).tolist() == values.tolist()


def test_rank_ends_count_the_values_of_the_first_ranks():
    by_rank, ends = layout.rank_major(np.arange(6.0), np.array([3, 1, 2]))

    assert by_rank.tolist() == [0.0, 3.0, 4.0, 1.0, 5.0, 2.0]
    assert ends.tolist() == [3, 5, 6]


def read_every_list(project, policies=POLICIES, depths=(None, 1, 2, 3, 9)):
    """Read every list of the project whole under ``policies`` at ``depths``, checking
    each read against the log's; the reads write the blocks fills marked."""
    now = timezone.now()
    for policy in policies:
        pairs = selectors.logged_pair_grades(project.pk, as_of=now, policy=policy)
        for result_list in project.result_lists.all():
            for depth in depths:
                whole = packed_reads.stored_result_list_grades(
                    result_list.pk, project.pk, as_of=now, policy=policy, depth=depth
                )
                logged = packed_reads.result_list_grades(result_list.pk, pairs, depth=depth)
                assert_same_list(whole, logged)


@pytest.mark.parametrize("seed", [21, 22])
def test_the_blocks_join_the_rows_and_read_as_the_log_for_every_depth(project, seed):
    random_events(project, seed=seed)
    random_events(project, seed=seed + 1)
    random_hits(project, seed=seed)
    packed.packed_fill(project.pk)
    # A fill only marks the blocks of its queries; the first read of a list writes them.
    assert RankedBlock.objects.filter(stale=False).count() == 0

    read_every_list(project)

    assert not RankedBlock.objects.filter(stale=True).exists()
    assert RankedBlock.objects.count() > len(POLICIES) * 2  # Several blocks per list.
    rows = stored_rows(project)
    assert oracles.stored_blocks(project) == rows and len(rows) > 0


@pytest.mark.parametrize("distinct, width", [(1, 1), (256, 1), (257, 2), (65_537, 4)])
def test_a_blocks_codes_give_back_every_grade_bit_for_bit(distinct, width):
    rng = np.random.default_rng(distinct)
    # Two NaNs of other bits, and -0.0 beside 0.0, among the distinct values.
    odd = np.array([0x7FF8000000000001, 0x7FF8000000000000], dtype=np.int64).view(np.float64)
    values = np.concatenate([odd, [-0.0, 0.0], rng.random(distinct)])[-distinct:]
    shuffled = rng.permutation(np.concatenate([values, values[: distinct // 2]]))

    grades, got_width, codes = layout.block_codes(shuffled)

    assert (got_width, codes.dtype, len(grades)) == (
        width,
        layout.CODE_TYPES[width],
        distinct,
    )
    assert grades[codes].view(np.int64).tolist() == shuffled.view(np.int64).tolist()


def test_blocks_of_every_code_width_read_as_the_log(project, monkeypatch):
    # Blocks' dictionaries of 1, 2 and 4-byte codes side by side in one list's read: the
    # first three numbers of distinct grades the rule is asked about get 1, 2 and 4
    # bytes (query ids, and so the blocks' grades, differ from run to run), and each
    # keeps its width when asked again (by the oracle too).
    widths = {}

    def any_width(distinct: int) -> int:
        return widths.setdefault(distinct, (1, 2, 4)[len(widths) % 3])

    monkeypatch.setattr(layout, "code_width", any_width)
    random_events(project, seed=24)
    random_events(project, seed=25)
    random_hits(project, seed=24)
    packed.packed_fill(project.pk)

    read_every_list(project)

    assert set(RankedBlock.objects.values_list("width", flat=True)) == {1, 2, 4}
    rows = stored_rows(project)
    assert oracles.stored_blocks(project) == rows and len(rows) > 0


@pytest.mark.parametrize(
    "corrupt",
    [
        "width = 2",  # Not the width of so many grades.
        "grades = substring(grades FROM 9)",  # A code beyond the grades left.
        "judged = substring(judged FROM 2)",  # A judged grade fewer than the header's.
        "grades = grades || substring(grades FROM 1 FOR 8)",  # A grade twice.
    ],
)
def test_the_oracle_finds_a_block_whose_codes_do_not_add_up(project, corrupt):
    random_events(project, seed=26)
    random_hits(project, seed=26)
    packed.packed_fill(project.pk)
    read_every_list(project, policies=["mean"], depths=(None,))
    assert packed_differences(project) == []
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE judgements_rankedblock SET {corrupt}"
            " WHERE id = (SELECT min(id) FROM judgements_rankedblock"
            "             WHERE NOT stale AND length(judged) > 0 AND length(grades) > 8)"
        )
        assert cursor.rowcount == 1

    assert {d.table for d in packed_differences(project)} == {"judgements_rankedblock"}


def test_a_fill_marks_its_blocks_and_a_read_writes_those_of_its_list_and_policy(project):
    random_events(project, seed=23)
    random_hits(project, seed=23)
    packed.packed_fill(project.pk)
    read_every_list(project, depths=(None,))
    before = {row.pk: row for row in RankedBlock.objects.all()}
    query = project.queries.order_by("pk")[1]
    block = query.pk // packed.BLOCK_QUERIES
    rater = UserFactory(username="late", roles=["rater"])
    document = project.documents.order_by("pk").first()

    JudgementFactory(rater=rater, query=query, document=document, grade=3)
    assert packed.packed_fill(project.pk) == 1

    marked = RankedBlock.objects.filter(stale=True)
    assert {row.block for row in marked} == {block}
    assert marked.count() == project.result_lists.count() * len(POLICIES)
    assert packed_differences(project) == []  # Marked blocks wait; the rows are exact.

    first_list = project.result_lists.order_by("pk").first()
    read_every_list(project, policies=["median"], depths=(2,))
    written = RankedBlock.objects.filter(stale=False, block=block)
    assert set(written.values_list("policy", flat=True)) == {"median"}
    kept = {pk for pk, row in before.items() if row.block != block}
    assert kept <= set(RankedBlock.objects.values_list("pk", flat=True))  # Not written again.
    assert first_list is not None and packed_differences(project) == []


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_read_of_many_queries_takes_no_blocks_lock_and_a_chunk_writes_its_blocks_alone(
    project,
):
    # Many queries close together are read through their blocks when these are current;
    # stale ones are not written by the read (a refresh of some queries takes no
    # block's lock) but by a recompute's chunk beforehand, its own blocks only, so that
    # chunks side by side never meet.
    for seed in (24, 25, 26):
        random_events(project, seed=seed)
    random_hits(project, seed=24, lists=1)
    packed.packed_fill(project.pk)
    result_list = project.result_lists.get()
    query_ids = sorted(project.queries.values_list("pk", flat=True))
    some = query_ids[:5]
    span = packed_reads.block_span(some)
    stale = RankedBlock.objects.filter(result_list=result_list, policy="mean", stale=True)
    blocks = set(stale.values_list("block", flat=True))
    assert set(range(span[0], span[1] + 1)) <= blocks and max(blocks) > span[1]
    now = timezone.now()
    pairs = selectors.logged_pair_grades(project.pk, as_of=now, policy="mean")
    logged = packed_reads.result_list_grades(result_list.pk, pairs, depth=None, query_ids=some)

    def read():
        return packed_reads.stored_result_list_grades(
            result_list.pk, project.pk, as_of=now, policy="mean", depth=None, query_ids=some
        )

    assert_same_list(read(), logged)
    assert set(stale.values_list("block", flat=True)) == blocks
    assert held_block_locks() == []

    assert packed.blocks_refresh(result_list.pk, "mean", span)
    assert set(stale.values_list("block", flat=True)) == {b for b in blocks if b > span[1]}
    assert_same_list(read(), logged)


def held_block_locks() -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT objid FROM pg_locks WHERE locktype = 'advisory' AND classid = %s"
            " AND pid = pg_backend_pid()",
            [packed.BLOCK_LOCK],
        )
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_while_another_transaction_holds_a_block_the_reader_waits_for_nothing(project):
    # A stale query whose block another transaction holds stays stale: the list is laid
    # out from the pair grades. A stale block another holds is not written: the list is
    # read query by query. Either way the values are the log's.
    random_events(project, seed=24)
    random_hits(project, seed=24, lists=1)
    packed.packed_fill(project.pk)
    result_list = project.result_lists.get()
    query = project.queries.order_by("pk").first()
    block = query.pk // packed.BLOCK_QUERIES
    spec = MetricSpec(k=3)
    with held_elsewhere(lambda: advisory_lock(packed.BLOCK_LOCK, block)):
        now = timezone.now()
        per_query = packed_reads.stored_result_list_grades(
            result_list.pk, project.pk, as_of=now, policy="mean", depth=3
        )
        assert RankedBlock.objects.get(block=block, policy="mean").stale
        QueryGrades.objects.filter(query=query).update(stale=True)
        unfilled = packed_reads.stored_result_list_grades(
            result_list.pk, project.pk, as_of=now, policy="mean", depth=3
        )
        _, result = result_list_evaluate(result_list, spec, as_of=now)

    pairs = selectors.logged_pair_grades(project.pk, as_of=now, policy="mean")
    assert_same_list(per_query, packed_reads.result_list_grades(result_list.pk, pairs, depth=3))
    assert unfilled is None and QueryGrades.objects.get(query=query).stale
    _, logged = result_list_evaluate(result_list, spec, as_of=now, pairs=pairs)
    assert result.ndcg.tobytes() == logged.ndcg.tobytes() and len(result.ndcg) > 0


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_reader_behind_a_fill_of_a_block_does_not_write_the_block(project):
    # A dashboard reads in one REPEATABLE READ snapshot, in which a block is stale.
    # Another fill of a query of that block commits after the snapshot began: written
    # from the snapshot, the block would lack that fill's rows, so PostgreSQL refuses
    # the write (the fill marked the block again), and the list is read query by query.
    random_events(project, seed=25)
    random_hits(project, seed=25, lists=1)
    packed.packed_fill(project.pk)
    result_list = project.result_lists.get()
    # Three consecutive ids: two of them share a block of three.
    queries = list(project.queries.order_by("pk"))
    first, _ = next(
        (a, b)
        for a, b in itertools.pairwise(queries)
        if a.pk // packed.BLOCK_QUERIES == b.pk // packed.BLOCK_QUERIES
    )
    block = first.pk // packed.BLOCK_QUERIES
    rater = UserFactory(username="late", roles=["rater"])
    document = project.documents.order_by("pk").first()

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cursor.execute("SELECT count(*) FROM judgements_rankedblock")  # The snapshot.

        def grade_and_fill():
            JudgementFactory(rater=rater, query=first, document=document, grade=3)
            packed.packed_fill(project.pk)
            connections["default"].close()

        other = threading.Thread(target=grade_and_fill)
        other.start()
        other.join(timeout=30)

        assert not packed.blocks_refresh(result_list.pk, "mean")
        assert RankedBlock.objects.get(block=block, policy="mean").stale
        now = timezone.now()
        read = packed_reads.stored_result_list_grades(
            result_list.pk, project.pk, as_of=now, policy="mean", depth=None
        )
        pairs = selectors.logged_pair_grades(project.pk, as_of=now, policy="mean")
        assert_same_list(read, packed_reads.result_list_grades(result_list.pk, pairs, depth=None))

    read_every_list(project, policies=["mean"])
    assert not RankedBlock.objects.filter(policy="mean", stale=True).exists()
    assert packed_differences(project) == []
