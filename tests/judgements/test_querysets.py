import datetime as dt

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from judgements.models import Judgement
from metrics.core.consensus import consensus
from tests.factories import JudgementFactory
from tests.judgements.test_pair_grades import random_events


def at(day, hour=12):
    return dt.datetime(2026, 11, day, hour, tzinfo=dt.UTC)


@pytest.fixture
def pair(query_with_hits):
    return {"query": query_with_hits, "document": query_with_hits.hits.get(rank=1).document}


def grade(rater, pair, value, day, kind="grade"):
    with time_machine.travel(at(day), tick=False):
        return JudgementFactory(rater=rater, grade=value, kind=kind, **pair)


def test_current_grades_keep_the_newest_event_per_rater(rater, other_rater, pair):
    grade(rater, pair, 1, day=1)
    grade(rater, pair, 3, day=2)
    grade(other_rater, pair, 2, day=1)
    current = Judgement.objects.current_grades()
    assert sorted(current.values_list("rater__username", "grade")) == [("alice", 3), ("bob", 2)]


def test_current_grades_leave_out_a_rater_whose_newest_answer_is_cant_tell(rater, pair):
    grade(rater, pair, 2, day=1)
    grade(rater, pair, None, day=2, kind="cant_tell")
    assert not Judgement.objects.current_grades().exists()


def test_current_grades_as_of_a_past_moment_ignore_later_events(rater, pair):
    grade(rater, pair, 1, day=1)
    grade(rater, pair, 3, day=5)
    then = Judgement.objects.as_of(at(3)).current_grades()
    assert list(then.values_list("grade", flat=True)) == [1]


def test_consensus_is_the_mean_of_current_grades_by_default(rater, other_rater, pair):
    grade(rater, pair, 0, day=1)
    grade(rater, pair, 3, day=2)
    grade(other_rater, pair, 2, day=1)
    (row,) = Judgement.objects.consensus()
    assert row["consensus"] == pytest.approx(2.5)
    assert (row["raters"], row["min_grade"], row["max_grade"]) == (2, 2, 3)


def test_consensus_by_median(rater, other_rater, analyst, pair):
    for user, value in ((rater, 0), (other_rater, 1), (analyst, 3)):
        grade(user, pair, value, day=1)
    (row,) = Judgement.objects.consensus(policy="median")
    assert row["consensus"] == 1.0


def test_current_grades_take_one_query_and_consensus_reads_them_with_one_copy(
    rater, other_rater, pair
):
    grade(rater, pair, 1, day=1)
    grade(other_rater, pair, 2, day=1)
    with CaptureQueriesContext(connection) as queries:
        list(Judgement.objects.current_grades())
    assert len(queries) == 1
    # The consensus reads the same rows with one COPY, which goes around Django's
    # cursor wrapper: no statement of its own shows here, one per pair would.
    with CaptureQueriesContext(connection) as queries:
        rows = Judgement.objects.consensus()
    assert (len(queries), len(rows)) == (0, 1)


@pytest.mark.parametrize("policy", ["mean", "median", "majority", "quepid"])
def test_consensus_under_every_policy_equals_the_numpy_core(project, policy):
    random_events(project, seed=7)
    current: dict = {}
    for event in Judgement.objects.for_project(project).current_grades():
        current.setdefault((event.query_id, event.document_id), []).append(event.grade)
    expected = {
        pair: float(consensus(grades, [0, len(grades)], policy)[0])
        for pair, grades in current.items()
    }

    rows = Judgement.objects.for_project(project).consensus(policy)

    assert len(expected) > 5
    assert {(row["query_id"], row["document_id"]): row["consensus"] for row in rows} == expected


def test_majority_breaks_ties_to_the_lowest_grade_and_quepid_takes_the_third_highest(
    rater, other_rater, analyst, pair
):
    for user, value in ((rater, 3), (other_rater, 1), (analyst, 3)):
        grade(user, pair, value, day=1)
    ((majority,), (quepid,)) = [
        [row["consensus"] for row in Judgement.objects.consensus(policy)]
        for policy in ("majority", "quepid")
    ]
    assert (majority, quepid) == (3.0, 1.0)
    grade(analyst, pair, 1, day=2)
    (majority,) = [row["consensus"] for row in Judgement.objects.consensus("majority")]
    assert majority == 1.0


def test_an_unknown_consensus_policy_is_refused(pair):
    with pytest.raises(ValueError, match="policy must be one of"):
        Judgement.objects.consensus("mode")
