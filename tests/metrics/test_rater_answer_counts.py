"""Each rater's skips and can't-tell answers, for analysts (metrics.dashboards.raters)."""

import datetime as dt

import pytest
import time_machine

from judgements.queue import queue_skip_pair
from metrics.dashboards.raters import RaterAnswerCounts, rater_answer_counts, raters_report
from tests.factories import (
    DocumentFactory,
    HitFactory,
    JudgementFactory,
    ProjectFactory,
    QueryFactory,
    ResultListFactory,
)

# alice and bob (raters) skip and answer pairs of "outdoor"; charlie (analyst) reads the
# counts. A second project's skips and answers never count for "outdoor".

NOV_1 = dt.datetime(2026, 11, 1, 12, tzinfo=dt.UTC)


@pytest.fixture
def documents(project, query_with_hits):
    return [hit.document for hit in query_with_hits.hits.order_by("rank")]


def skip(rater, project, query, document, when):
    with time_machine.travel(when, tick=False):
        queue_skip_pair(rater=rater, project=project, query_id=query.pk, document_id=document.pk)


def event(rater, query, document, kind, when, grade=None):
    return JudgementFactory(
        rater=rater, query=query, document=document, kind=kind, grade=grade, created_at=when
    )


def test_it_counts_skips_pairs_skipped_and_current_cant_tell_per_rater(
    project, rater, other_rater, query_with_hits, documents
):
    tent = query_with_hits
    for when in (NOV_1, NOV_1 + dt.timedelta(hours=1)):
        skip(rater, project, tent, documents[0], when)
    skip(rater, project, tent, documents[1], NOV_1)
    event(rater, tent, documents[2], "cant_tell", NOV_1)
    # A can't tell that a grade replaced is no longer the rater's answer.
    event(rater, tent, documents[3], "cant_tell", NOV_1)
    event(rater, tent, documents[3], "grade", NOV_1 + dt.timedelta(hours=1), grade=2)
    event(other_rater, tent, documents[2], "cant_tell", NOV_1)
    event(other_rater, tent, documents[4], "grade", NOV_1, grade=1)

    assert rater_answer_counts(project) == [
        RaterAnswerCounts("alice", skips=3, skipped_pairs=2, cant_tell=1),
        RaterAnswerCounts("bob", skips=0, skipped_pairs=0, cant_tell=1),
    ]


def test_as_of_a_moment_it_leaves_out_later_skips_and_answers(
    project, rater, query_with_hits, documents
):
    tent = query_with_hits
    skip(rater, project, tent, documents[0], NOV_1)
    skip(rater, project, tent, documents[1], NOV_1 + dt.timedelta(days=1))
    event(rater, tent, documents[2], "cant_tell", NOV_1 + dt.timedelta(days=1))
    event(rater, tent, documents[3], "cant_tell", NOV_1)
    event(rater, tent, documents[3], "grade", NOV_1 + dt.timedelta(days=1), grade=3)

    assert rater_answer_counts(project, as_of=NOV_1 + dt.timedelta(hours=1)) == [
        RaterAnswerCounts("alice", skips=1, skipped_pairs=1, cant_tell=1)
    ]


def test_another_projects_skips_and_answers_do_not_count(project, rater, query_with_hits):
    other = ProjectFactory(slug="other")
    query = QueryFactory(project=other)
    document = DocumentFactory(project=other)
    HitFactory(
        result_list=ResultListFactory(project=other), query=query, document=document, rank=1
    )
    skip(rater, other, query, document, NOV_1)
    event(rater, query, document, "cant_tell", NOV_1)

    assert rater_answer_counts(project) == []
    assert rater_answer_counts(other) == [RaterAnswerCounts("alice", 1, 1, 1)]


def test_the_raters_report_carries_them(project, rater, query_with_hits, documents):
    skip(rater, project, query_with_hits, documents[0], NOV_1)

    report = raters_report(project, policy="mean", as_of=None)

    assert report.answer_counts == [RaterAnswerCounts("alice", 1, 1, 0)]
