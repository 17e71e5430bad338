import datetime as dt

import numpy as np
import pytest
from django.utils import timezone

from config import pgcopy
from judgements.models import Hit, Judgement, Query, QueryGrades, RankedGrades
from judgements.packed import packed_fill
from metrics import packed_reads, selectors
from metrics.core.consensus import POLICIES
from metrics.sources import Source, grades_freshness
from tests.factories import (
    DocumentFactory,
    HitFactory,
    JudgementFactory,
    QueryFactory,
    ResultListFactory,
)
from tests.judgements.test_grade_summaries import random_hits
from tests.judgements.test_pair_grades import random_events

# pair_grades reads the trigger-kept table for the present and replays the log for the
# past; both must give the same arrays to the last bit.


def now(project):
    return grades_freshness(project.pk, as_of=None)


def assert_same(fast, slow):
    assert fast is not None
    for name in ("query_ids", "document_ids", "raters"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    assert np.array_equal(fast.grades.view(np.int64), slow.grades.view(np.int64))


@pytest.mark.parametrize("seed", [4, 5])
@pytest.mark.parametrize("policy", POLICIES)
def test_the_table_and_the_log_give_identical_grades_now(project, seed, policy):
    random_events(project, seed=seed)
    now = timezone.now()

    fast = selectors.stored_pair_grades(project.pk, policy=policy)
    slow = selectors.logged_pair_grades(project.pk, as_of=now, policy=policy)

    assert len(slow.grades) > 0
    assert_same(fast, slow)
    fresh = grades_freshness(project.pk, as_of=now)
    assert fresh.pairs == Source.PAIRS
    assert_same(selectors.pair_grades(project.pk, fresh=fresh, policy=policy), slow)


def test_the_table_and_the_log_agree_on_a_subset_of_queries(project):
    random_events(project, seed=6)
    query_ids = sorted(set(Judgement.objects.values_list("query_id", flat=True)))[:2]
    now = timezone.now()
    arguments = {"policy": "median", "query_ids": query_ids}

    fast = selectors.stored_pair_grades(project.pk, **arguments)

    assert set(fast.query_ids) == set(query_ids)
    assert_same(fast, selectors.logged_pair_grades(project.pk, as_of=now, **arguments))


def test_a_past_moment_is_read_from_the_log(project, query_with_hits, rater):
    document = query_with_hits.hits.get(rank=1).document
    then = timezone.now() - dt.timedelta(days=1)
    pair = {"rater": rater, "query": query_with_hits, "document": document}
    JudgementFactory(**pair, grade=1, created_at=then - dt.timedelta(hours=1))
    JudgementFactory(**pair, grade=3)

    past = selectors.pair_grades(
        project.pk, fresh=grades_freshness(project.pk, as_of=then), policy="mean"
    )
    now = selectors.pair_grades(
        project.pk, fresh=grades_freshness(project.pk, as_of=None), policy="mean"
    )
    assert (past.grades.tolist(), now.grades.tolist()) == ([1.0], [3.0])


def orm_pair_grades(project, *, as_of, policy, query_ids=None):
    """The pairs' consensus as of ``as_of`` from the ORM's current-answer rule
    (``Judgement.objects.current()``, a DISTINCT ON in SQL), grades kept."""
    events = Judgement.objects.filter(query__project=project).as_of(as_of)
    if query_ids is not None:
        events = events.filter(query_id__in=query_ids)
    rows = [
        (query, document, grade)
        for query, document, kind, grade in events.current().values_list(
            "query_id", "document_id", "kind", "grade"
        )
        if kind == "grade"
    ]
    columns = np.array(rows, dtype=np.int64).reshape(-1, 3)
    return selectors._consensus_of(
        columns[:, 0], columns[:, 1], columns[:, 2].astype(np.float64), policy
    )


@pytest.mark.parametrize("policy", POLICIES)
def test_the_replayed_log_equals_the_orms_current_answers_at_every_moment(project, policy):
    # The log is replayed in numpy (metrics.core.replay); the ORM's rule is the oracle,
    # at moments before, between (ties included) and after the events.
    random_events(project, seed=13)
    random_events(project, seed=14, raters=3)
    times = sorted(set(Judgement.objects.values_list("created_at", flat=True)))
    moments = [times[0] - dt.timedelta(seconds=1), *times[:: len(times) // 12], times[-1]]
    some = sorted(project.queries.values_list("pk", flat=True))[::2]

    for moment in moments:
        for query_ids in (None, some):
            arguments = {"as_of": moment, "policy": policy, "query_ids": query_ids}
            assert_same(
                selectors.logged_pair_grades(project.pk, **arguments),
                orm_pair_grades(project, **arguments),
            )


def test_an_event_dated_in_the_future_sends_now_to_the_log(project, query_with_hits, rater):
    # Imports accept any time stamp; the table then holds a state later than now.
    document = query_with_hits.hits.get(rank=1).document
    pair = {"rater": rater, "query": query_with_hits, "document": document}
    JudgementFactory(**pair, grade=1)
    JudgementFactory(**pair, grade=3, created_at=timezone.now() + dt.timedelta(days=2))
    now = timezone.now()

    fresh = grades_freshness(project.pk, as_of=now)
    assert selectors.pair_grades(project.pk, fresh=fresh, policy="mean").grades.tolist() == [1.0]
    assert selectors.stored_pair_grades(project.pk, policy="mean").grades.tolist() == [3.0]


def test_an_unknown_policy_is_refused(project):
    with pytest.raises(ValueError, match="policy must be one of"):
        selectors.pair_grades(project.pk, fresh=now(project), policy="mean; DROP TABLE x")


def test_a_project_without_grades_has_no_pairs_and_its_list_evaluates_to_zero(query_with_hits):
    from metrics.evaluate import result_list_evaluate
    from metrics.registry import project_spec

    project = query_with_hits.project
    pairs = selectors.pair_grades(project.pk, fresh=now(project), policy="mean")
    assert (len(pairs.query_ids), len(pairs.grades)) == (0, 0)

    result_list = project.result_lists.get()
    grades, result = result_list_evaluate(result_list, project_spec(project), as_of=timezone.now())
    assert grades.query_ids.tolist() == [query_with_hits.pk]
    assert (result.ndcg.tolist(), result.judged.tolist()) == ([0.0], [0])


# The packed rows of migration 0008 give a result list's arrays in one read; they must
# equal what the log gives, except that judged grades come highest first.


def judged_sorted(grades) -> list:
    owner = np.repeat(np.arange(len(grades.judged_offsets) - 1), np.diff(grades.judged_offsets))
    order = np.lexsort((-grades.judged_grades, owner))
    return grades.judged_grades[order].view(np.int64).tolist()


def assert_same_list(packed, logged):
    assert packed is not None
    for name in ("query_ids", "offsets", "judged_offsets", "judgements"):
        assert np.array_equal(getattr(packed, name), getattr(logged, name)), name
    # Bit patterns: NaN (unjudged) equals NaN, and 1.5 must not come back as 1.4999...
    assert (
        packed.ranked_grades.view(np.int64).tolist()
        == logged.ranked_grades.view(np.int64).tolist()
    )
    assert judged_sorted(packed) == judged_sorted(logged)


@pytest.mark.parametrize("seed", [7, 8])
@pytest.mark.parametrize("policy", POLICIES)
def test_packed_grades_equal_the_logs_for_every_depth(project, seed, policy):
    random_events(project, seed=seed)
    random_hits(project, seed=seed)
    packed_fill(project.pk)  # The refresh's fill: the reads below are packed.
    now = timezone.now()
    pairs = selectors.logged_pair_grades(project.pk, as_of=now, policy=policy)
    for result_list in project.result_lists.all():
        for depth in (None, 1, 3):
            arguments = {"policy": policy, "depth": depth}
            packed = packed_reads.stored_result_list_grades(
                result_list.pk, project.pk, as_of=timezone.now(), **arguments
            )
            logged = packed_reads.result_list_grades(result_list.pk, pairs, depth=depth)
            assert len(logged.query_ids) > 0
            assert_same_list(packed, logged)


def test_packed_grades_of_some_queries(project):
    random_events(project, seed=9)
    random_hits(project, seed=9, lists=1)
    result_list = project.result_lists.get()
    query_ids = sorted(project.queries.values_list("pk", flat=True))[1:]
    packed_fill(project.pk)
    now = timezone.now()
    pairs = selectors.logged_pair_grades(project.pk, as_of=now, policy="mean")

    packed = packed_reads.stored_result_list_grades(
        result_list.pk, project.pk, as_of=now, policy="mean", depth=2, query_ids=query_ids
    )

    assert packed.query_ids.tolist() == query_ids
    logged = packed_reads.result_list_grades(result_list.pk, pairs, depth=2, query_ids=query_ids)
    assert_same_list(packed, logged)


def test_the_top_k_is_the_first_k_hits_whatever_their_rank_numbers(project, rater):
    # A run may skip rank numbers; NDCG@2 counts the first two hits returned.
    query = QueryFactory(project=project)
    result_list = ResultListFactory(project=project)
    documents = [DocumentFactory(project=project, external_id=f"gap{n}") for n in range(3)]
    for document, rank in zip(documents, [1, 5, 9], strict=True):
        HitFactory(result_list=result_list, query=query, document=document, rank=rank)
        JudgementFactory(rater=rater, query=query, document=document, grade=3)
    packed_fill(project.pk)
    now = timezone.now()
    pairs = selectors.logged_pair_grades(project.pk, as_of=now, policy="mean")

    logged = packed_reads.result_list_grades(result_list.pk, pairs, depth=2)
    packed = packed_reads.stored_result_list_grades(
        result_list.pk, project.pk, as_of=timezone.now(), policy="mean", depth=2
    )

    assert logged.ranked_grades.tolist() == packed.ranked_grades.tolist() == [3.0, 3.0]


def test_an_evaluation_reads_packed_grades_and_equals_the_log(project):
    from metrics.evaluate import result_list_evaluate
    from metrics.registry import MetricSpec

    random_events(project, seed=10)
    random_hits(project, seed=10, lists=1)
    result_list = project.result_lists.get()
    now = timezone.now()
    for spec in (
        MetricSpec(k=3),
        MetricSpec(k=2, gain="linear", ideal="returned", consensus="median"),
        MetricSpec(k=None, discount="rank", unjudged="remove", consensus="quepid"),
    ):
        pairs = selectors.logged_pair_grades(project.pk, as_of=now, policy=spec.consensus)
        _, packed = result_list_evaluate(result_list, spec, as_of=now)
        _, logged = result_list_evaluate(result_list, spec, as_of=now, pairs=pairs)
        for name in ("dcg", "idcg", "ndcg", "judged", "retrieved"):
            assert np.array_equal(getattr(packed, name), getattr(logged, name)), (spec, name)
        assert packed.ndcg.max() > 0


# The packed read comes as one row per range of CHUNK_QUERIES query ids; in chunks of one
# or two queries, with ranges that hold no query of the list, the arrays are the same.


@pytest.mark.parametrize("chunk", [1, 2])
def test_packed_grades_read_in_chunks_equal_the_logs(project, monkeypatch, chunk):
    random_events(project, seed=11)
    random_events(project, seed=12)
    random_hits(project, seed=11, lists=1)
    monkeypatch.setattr(packed_reads, "CHUNK_QUERIES", chunk)
    packed_fill(project.pk)
    result_list = project.result_lists.get()
    query_ids = sorted(project.queries.values_list("pk", flat=True))
    now = timezone.now()
    pairs = selectors.logged_pair_grades(project.pk, as_of=now, policy="mean")

    for some in (None, query_ids[::2]):  # Every other query: ranges with no query.
        for depth in (None, 2):
            arguments = {"policy": "mean", "depth": depth, "query_ids": some}
            packed = packed_reads.stored_result_list_grades(
                result_list.pk, project.pk, as_of=timezone.now(), **arguments
            )
            logged = packed_reads.result_list_grades(
                result_list.pk, pairs, depth=depth, query_ids=some
            )
            assert_same_list(packed, logged)
    params = {"result_list": result_list.pk, "project": project.pk, "as_of": now}
    params |= {"queries": None, "depth": None, "policy": "mean", "chunk": chunk}
    rows = pgcopy.copy_fields(packed_reads.STORED_RANKED_SQL, params)
    # One row per range of ids, the first starting at the list's first query.
    assert len(rows) == (query_ids[-1] - query_ids[0]) // chunk + 1 >= 3


# Queries whose packed rows wait for a fill are read from the pair grades, in the same
# read as the others', and nothing is written.


def test_stale_queries_are_laid_out_from_the_pair_grades_and_nothing_is_written(project):
    for seed in (13, 14, 15, 16):  # Three queries each.
        random_events(project, seed=seed)
    random_hits(project, seed=13, lists=1)
    packed_fill(project.pk)
    result_list = project.result_lists.get()
    query_ids = sorted(project.queries.values_list("pk", flat=True))
    # A new grade on the middle query: its packed rows are stale until the next fill.
    middle = Query.objects.get(pk=query_ids[len(query_ids) // 2])
    hit = Hit.objects.filter(result_list=result_list, query=middle).first()
    rater = Judgement.objects.filter(query=middle).first().rater
    Judgement.objects.create(query=middle, document=hit.document, rater=rater, grade=3)
    stale = QueryGrades.objects.filter(stale=True).values_list("query_id", flat=True)
    assert list(stale) == [middle.pk]
    now = timezone.now()
    pairs = selectors.logged_pair_grades(project.pk, as_of=now, policy="mean")
    before = RankedGrades.objects.filter(query=middle).values_list("ranked", flat=True)
    before = sorted(bytes(row) for row in before)
    for depth, some in ((None, None), (2, query_ids[1:-1])):
        arguments = {"policy": "mean", "depth": depth, "query_ids": some}
        read = packed_reads.stored_result_list_grades(
            result_list.pk, project.pk, as_of=now, **arguments
        )
        logged = packed_reads.result_list_grades(
            result_list.pk, pairs, depth=depth, query_ids=some
        )
        assert_same_list(read, logged)
    assert QueryGrades.objects.get(query=middle).stale
    after = RankedGrades.objects.filter(query=middle).values_list("ranked", flat=True)
    assert sorted(bytes(row) for row in after) == before


def test_chunks_are_joined_in_the_order_of_their_first_query_whatever_order_they_come_in():
    def first(query_id: int) -> bytes:
        return query_id.to_bytes(8, "big", signed=True)

    rows = [
        [first(300), b"c", b"C"],
        [first(2), b"a", b"A"],
        [first(150), None, None],  # A range without a query.
        [first(40), b"b", b"B"],
    ]

    assert pgcopy.joined_chunks(rows, key=0, width=3) == [b"abc", b"ABC"]
    assert pgcopy.joined_chunks([], key=0, width=3) == [b"", b""]
