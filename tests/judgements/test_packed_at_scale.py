"""The packed rows at scale: thousands of queries loaded in bulk, marked by the triggers
and filled in numpy, give every result list the grades the log gives, under every
policy, bit for bit; a grade afterwards refills its query alone."""

import time
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.utils import timezone

from judgements.models import Judgement, Project, QueryGrades, RankedGrades
from judgements.packed import packed_fill
from metrics import packed_reads, selectors
from metrics.core.consensus import policy_names

QUERIES = 2_000


@pytest.fixture
def loaded(db):
    call_command(
        "generate_load",
        stdout=StringIO(),
        queries=QUERIES,
        hits_per_query=20,
        judgements=60_000,
        raters=6,
    )
    return Project.objects.get(slug="generated-load")


def test_thousands_of_queries_fill_to_what_the_log_gives(loaded):
    project = loaded
    assert QueryGrades.objects.filter(stale=True).count() >= QUERIES * 0.9
    started = time.perf_counter()
    filled = packed_fill(project.pk)
    seconds = time.perf_counter() - started
    print(f"filled {filled} queries in {seconds:.2f} s")
    assert filled >= QUERIES * 0.9
    lists = list(project.result_lists.all())
    assert RankedGrades.objects.count() == len(lists) * QUERIES * len(policy_names())
    now = timezone.now()
    assert not QueryGrades.objects.filter(stale=True).exists()
    for policy in policy_names():
        pairs = selectors.logged_pair_grades(project.pk, as_of=now, policy=policy)
        for result_list in lists:
            packed = packed_reads.stored_result_list_grades(
                result_list.pk, project.pk, as_of=now, policy=policy, depth=None
            )
            logged = packed_reads.result_list_grades(result_list.pk, pairs, depth=None)
            assert packed is not None
            np.testing.assert_array_equal(packed.query_ids, logged.query_ids)
            np.testing.assert_array_equal(packed.offsets, logged.offsets)
            np.testing.assert_array_equal(packed.ranked_grades, logged.ranked_grades)
            np.testing.assert_array_equal(packed.judged_offsets, logged.judged_offsets)
            np.testing.assert_array_equal(packed.judgements, logged.judgements)
            # The packed ideal comes highest first; the log's by document.
            for start, end in zip(packed.judged_offsets, packed.judged_offsets[1:], strict=False):
                assert sorted(packed.judged_grades[start:end]) == sorted(
                    logged.judged_grades[start:end]
                )

    # Most of the list's queries (a recompute's chunk).
    some = sorted(project.queries.values_list("pk", flat=True))[300:1700]
    pairs = selectors.logged_pair_grades(project.pk, as_of=now, policy="mean")
    packed = packed_reads.stored_result_list_grades(
        lists[0].pk, project.pk, as_of=now, policy="mean", depth=None, query_ids=some
    )
    logged = packed_reads.result_list_grades(lists[0].pk, pairs, depth=None, query_ids=some)
    assert packed.query_ids.tolist() == some
    np.testing.assert_array_equal(packed.ranked_grades, logged.ranked_grades)
    np.testing.assert_array_equal(packed.judged_offsets, logged.judged_offsets)

    event = Judgement.objects.filter(query__project=project, kind="grade").first()
    Judgement.objects.create(
        rater=event.rater, query=event.query, document=event.document, grade=0
    )
    assert list(QueryGrades.objects.filter(stale=True).values_list("query", flat=True)) == [
        event.query_id
    ]
    assert packed_fill(project.pk) == 1
